"""The nodes of the loop: small async functions `(state, ctx) -> Update`.

A node reads the state, talks to one dependency and returns what changed; it
never decides where the run goes next (that is the graph's job, in graph.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from agentloop.v1 import agent_pb2, common_pb2, reasoner_pb2
from gateway.clients import ReasonerClient, ToolsClient
from gateway.events import EventSink
from gateway.state import STOP_COMPLETED, STOP_MAX_STEPS, RunState, Update

_TOOL_CHOICE_NONE = common_pb2.ToolChoice(mode=common_pb2.TOOL_CHOICE_MODE_NONE)


@dataclass
class RunContext:
    """What nodes need besides the state: dependencies, the event sink and the run's limits."""

    reasoner: ReasonerClient
    tools: ToolsClient
    sink: EventSink
    tool_specs: list[common_pb2.ToolSpec]
    initial_messages: list[common_pb2.Message]
    step_timeout_s: float
    deadline: float | None = None

    def timeout(self) -> float:
        """Timeout for the next dependency call: the step timeout, cut to the run's deadline."""
        if self.deadline is None:
            return self.step_timeout_s
        return max(0.001, min(self.step_timeout_s, self.deadline - time.monotonic()))


async def init_state(state: RunState, ctx: RunContext) -> Update:
    """Seed the conversation: system prompt, earlier turns, the new question."""
    return Update(messages=list(ctx.initial_messages))


def _params(state: RunState, ctx: RunContext, with_tools: bool) -> reasoner_pb2.CompletionParams:
    cfg = state.config
    params = reasoner_pb2.CompletionParams(model=cfg.model, messages=state.messages)
    if ctx.tool_specs:
        # Tools stay declared even when disabled: endpoints need them to read
        # earlier tool calls, and an unchanged prefix keeps prompt caches warm.
        params.tools.extend(ctx.tool_specs)
        if not with_tools:
            params.tool_choice.CopyFrom(_TOOL_CHOICE_NONE)
    if cfg.temperature is not None:
        params.temperature = cfg.temperature
    return params


async def _stream(
    state: RunState, ctx: RunContext, params: reasoner_pb2.CompletionParams
) -> reasoner_pb2.StepResult:
    """A streamed model call whose tokens become llm_token events as they arrive."""
    result = reasoner_pb2.StepResult()
    step = state.current_step
    async for event in ctx.reasoner.stream_step(params, ctx.timeout()):
        kind = event.WhichOneof("event")
        if kind == "token":
            ctx.sink.token(step, token=event.token)
        elif kind == "reasoning_token":
            ctx.sink.token(step, reasoning_token=event.reasoning_token)
        elif kind == "result":
            result = event.result
    return result


def _answer(result: reasoner_pb2.StepResult) -> common_pb2.Message:
    """The assistant message of an answering call, tool calls dropped (none may be left unanswered)."""
    msg = common_pb2.Message()
    msg.CopyFrom(result.message)
    del msg.tool_calls[:]
    return msg


async def agent(state: RunState, ctx: RunContext) -> Update:
    """ONE model call, or two when the answer is regenerated for streaming (seed 002).

    At the step limit the model is called without tools to answer from what it
    has (stop_reason max_steps). Otherwise a planning call decides between
    tools and an answer.
    """
    mode = state.config.stream_mode
    if state.current_step >= state.max_steps:
        params = _params(state, ctx, with_tools=False)
        if mode == agent_pb2.STREAM_MODE_NONE:
            result = await ctx.reasoner.step(params, ctx.timeout())
        else:
            result = await _stream(state, ctx, params)
        return Update(
            messages=[_answer(result)], llm_calls=1, usage=result.usage, stop=True, stop_reason=STOP_MAX_STEPS
        )

    params = _params(state, ctx, with_tools=True)
    if mode == agent_pb2.STREAM_MODE_ALL_STEPS:
        result = await _stream(state, ctx, params)
    else:
        result = await ctx.reasoner.step(params, ctx.timeout())
    if result.message.tool_calls or mode != agent_pb2.STREAM_MODE_FINAL_ONLY:
        return Update(messages=[result.message], llm_calls=1, usage=result.usage)

    # The planning call answered: generate the answer again, streamed, tools disabled.
    final = await _stream(state, ctx, _params(state, ctx, with_tools=False))
    usage = common_pb2.Usage()
    for u in (result.usage, final.usage):
        usage.prompt_tokens += u.prompt_tokens
        usage.completion_tokens += u.completion_tokens
        usage.total_tokens += u.total_tokens
        usage.reasoning_tokens += u.reasoning_tokens
    return Update(messages=[_answer(final)], llm_calls=2, usage=usage)


def _tool_message(result: common_pb2.ToolResult) -> common_pb2.Message:
    content = result.content
    if result.is_error:
        kind = common_pb2.ToolErrorKind.Name(result.error_kind).removeprefix("TOOL_ERROR_KIND_").lower()
        content = f"ERROR ({kind}): {content}"
    return common_pb2.Message(
        role=common_pb2.ROLE_TOOL, content=content, tool_call_id=result.tool_call_id, name=result.name
    )


async def tools(state: RunState, ctx: RunContext) -> Update:
    """Run the last assistant message's tool calls in parallel; every call gets one result.

    Results are recorded in completion order (tool_result_history) but appended
    to the conversation in call order, so the transcript reads like the request.
    """
    calls = state.pending_tool_calls()
    finished: dict[str, common_pb2.ToolResult] = {}
    completion_order: list[common_pb2.ToolResult] = []
    async for event in ctx.tools.execute(calls, state.config.tool_timeout_s, ctx.timeout()):
        if event.HasField("started"):
            started = event.started
            ctx.sink.tool_start(started.name, started.arguments_json, started.tool_call_id)
        else:
            result = event.finished
            finished[result.tool_call_id] = result
            completion_order.append(result)
            ctx.sink.tool_end(result)
    return Update(
        messages=[_tool_message(finished[c.id]) for c in calls if c.id in finished],
        tool_calls=calls,
        tool_results=completion_order,
        steps=1,
    )


def explain_stop(state: RunState) -> str:
    """The reply to give when the loop ended without an answer from the model."""
    if state.stop_reason == STOP_MAX_STEPS:
        return (
            f"I stopped after {state.current_step} tool steps (the limit is {state.max_steps}) "
            "without reaching an answer."
        )
    return f"The run ended ({state.stop_reason}) before an answer was written."


async def finalize(state: RunState, ctx: RunContext) -> Update:
    """Write final_reply and stop_reason; explain the stop when the model left no text."""
    last = state.last_message
    reply = last.content if last is not None and last.role == common_pb2.ROLE_ASSISTANT else ""
    stop_reason = state.stop_reason or STOP_COMPLETED
    if not reply.strip():
        reply = explain_stop(state) if state.stop_reason else "The model returned an empty answer."
    return Update(stop=True, stop_reason=stop_reason, final_reply=reply)
