"""The nodes of the loop: small async functions `(state, ctx) -> Update`.

A node reads the state, talks to one dependency and returns what changed; it
never decides where the run goes next (that is the graph's job, in graph.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TypeVar

from agentloop.v1 import agent_pb2, common_pb2, reasoner_pb2
from gateway.clients import ReasonerClient, ToolsClient
from gateway.context import trim
from gateway.events import EventSink
from gateway.journal import RunJournal
from gateway.state import STOP_CANCELLED, STOP_COMPLETED, STOP_MAX_STEPS, RunState, Update

T = TypeVar("T")

_TOOL_CHOICE_NONE = common_pb2.ToolChoice(mode=common_pb2.TOOL_CHOICE_MODE_NONE)
CANCELLED_RESULT = "The run was cancelled before this tool call finished."


class RunCancelled(Exception):
    """Cancel arrived while a node was waiting on a dependency."""


@dataclass
class RunContext:
    """What nodes need besides the state: dependencies, events, the journal, limits."""

    reasoner: ReasonerClient
    tools: ToolsClient
    sink: EventSink
    journal: RunJournal
    tool_specs: list[common_pb2.ToolSpec]
    new_messages: list[common_pb2.Message]
    """Messages init_state adds to the thread: seed history (new thread) and the question."""
    step_timeout_s: float
    deadline: float | None = None
    cancel: asyncio.Event = field(default_factory=asyncio.Event)
    recorded_results: dict[str, common_pb2.ToolResult] = field(default_factory=dict)
    """Tool results persisted before this process took the run over (resume)."""

    def timeout(self) -> float:
        """Timeout for the next dependency call: the step timeout, cut to the run's deadline."""
        if self.deadline is None:
            return self.step_timeout_s
        return max(0.001, min(self.step_timeout_s, self.deadline - time.monotonic()))

    async def unless_cancelled(self, work: Awaitable[T]) -> T:
        """Await `work`, abandoning it (RunCancelled) as soon as Cancel arrives."""
        if self.cancel.is_set():
            if asyncio.iscoroutine(work):
                work.close()
            raise RunCancelled
        task = asyncio.ensure_future(work)
        waiter = asyncio.ensure_future(self.cancel.wait())
        try:
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
        if task.done():
            return task.result()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        raise RunCancelled


async def init_state(state: RunState, ctx: RunContext) -> Update:
    """Add the new turn (and a new thread's seed history) to the conversation."""
    return Update(messages=list(ctx.new_messages))


def _params(state: RunState, ctx: RunContext, with_tools: bool) -> reasoner_pb2.CompletionParams:
    cfg = state.config
    params = reasoner_pb2.CompletionParams(
        model=cfg.model, messages=trim(state.messages, cfg.context_budget_tokens)
    )
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


async def _call(
    state: RunState, ctx: RunContext, params: reasoner_pb2.CompletionParams, stream: bool
) -> reasoner_pb2.StepResult:
    work = _stream(state, ctx, params) if stream else ctx.reasoner.step(params, ctx.timeout())
    return await ctx.unless_cancelled(work)


def _answer(result: reasoner_pb2.StepResult) -> common_pb2.Message:
    """The assistant message of an answering call, tool calls dropped (none may be left unanswered)."""
    msg = common_pb2.Message()
    msg.CopyFrom(result.message)
    del msg.tool_calls[:]
    return msg


def _sum_usage(*usages: common_pb2.Usage) -> common_pb2.Usage:
    total = common_pb2.Usage()
    for u in usages:
        total.prompt_tokens += u.prompt_tokens
        total.completion_tokens += u.completion_tokens
        total.total_tokens += u.total_tokens
        total.reasoning_tokens += u.reasoning_tokens
    return total


async def agent(state: RunState, ctx: RunContext) -> Update:
    """ONE model call, or two when the answer is regenerated for streaming (seed 002).

    At the step limit the model is called without tools to answer from what it
    has (stop_reason max_steps). Otherwise a planning call decides between
    tools and an answer. Cancel abandons the call: nothing was decided yet.
    """
    mode = state.config.stream_mode
    try:
        if state.current_step >= state.max_steps:
            params = _params(state, ctx, with_tools=False)
            result = await _call(state, ctx, params, stream=mode != agent_pb2.STREAM_MODE_NONE)
            return Update(
                messages=[_answer(result)],
                llm_calls=1,
                usage=result.usage,
                stop=True,
                stop_reason=STOP_MAX_STEPS,
            )
        params = _params(state, ctx, with_tools=True)
        result = await _call(state, ctx, params, stream=mode == agent_pb2.STREAM_MODE_ALL_STEPS)
        if result.message.tool_calls or mode != agent_pb2.STREAM_MODE_FINAL_ONLY:
            return Update(messages=[result.message], llm_calls=1, usage=result.usage)
        # The planning call answered: generate the answer again, streamed, tools disabled.
        final = await _call(state, ctx, _params(state, ctx, with_tools=False), stream=True)
        return Update(messages=[_answer(final)], llm_calls=2, usage=_sum_usage(result.usage, final.usage))
    except RunCancelled:
        return Update(stop=True, stop_reason=STOP_CANCELLED)


def tool_message(result: common_pb2.ToolResult) -> common_pb2.Message:
    """The tool message the model reads; errors are prefixed so the model can tell and recover."""
    content = result.content
    if result.is_error:
        kind = common_pb2.ToolErrorKind.Name(result.error_kind).removeprefix("TOOL_ERROR_KIND_").lower()
        content = f"ERROR ({kind}): {content}"
    return common_pb2.Message(
        role=common_pb2.ROLE_TOOL, content=content, tool_call_id=result.tool_call_id, name=result.name
    )


def cancelled_result(call: common_pb2.ToolCall) -> common_pb2.ToolResult:
    """The result a call gets when the run is cancelled before it finished."""
    return common_pb2.ToolResult(
        tool_call_id=call.id,
        name=call.name,
        content=CANCELLED_RESULT,
        is_error=True,
        error_kind=common_pb2.TOOL_ERROR_KIND_CANCELLED,
    )


async def _run_batch(
    state: RunState,
    ctx: RunContext,
    calls: list[common_pb2.ToolCall],
    finished: dict[str, common_pb2.ToolResult],
    completion_order: list[common_pb2.ToolResult],
) -> None:
    stream = ctx.tools.execute(calls, state.config.tool_timeout_s, ctx.timeout(), scope=state.run_id)
    async for event in stream:
        if event.HasField("started"):
            started = event.started
            ctx.sink.tool_start(started.name, started.arguments_json, started.tool_call_id)
        else:
            result = event.finished
            await ctx.journal.tool_result(state.run_id, result)
            finished[result.tool_call_id] = result
            completion_order.append(result)
            ctx.sink.tool_end(result)


async def tools(state: RunState, ctx: RunContext) -> Update:
    """Run the last assistant message's tool calls in parallel; every call gets exactly one result.

    Each result is persisted as it arrives, so after a crash only unfinished
    calls run again. Results are recorded in completion order but appended to
    the conversation in call order. On Cancel, unfinished calls get a
    "cancelled" result and the run stops.
    """
    calls = state.pending_tool_calls()
    finished: dict[str, common_pb2.ToolResult] = {}
    completion_order: list[common_pb2.ToolResult] = []
    for call in calls:
        if (done := ctx.recorded_results.get(call.id)) is not None:
            finished[call.id] = done
            completion_order.append(done)
            ctx.sink.tool_end(done)
    todo = [c for c in calls if c.id not in finished]
    cancelled = False
    if todo:
        try:
            await ctx.unless_cancelled(_run_batch(state, ctx, todo, finished, completion_order))
        except RunCancelled:
            for call in todo:
                if call.id not in finished:
                    result = cancelled_result(call)
                    await ctx.journal.tool_result(state.run_id, result)
                    finished[call.id] = result
                    completion_order.append(result)
                    ctx.sink.tool_end(result)
            cancelled = True
    return Update(
        messages=[tool_message(finished[c.id]) for c in calls],
        tool_calls=calls,
        tool_results=completion_order,
        steps=1,
        stop=True if cancelled else None,
        stop_reason=STOP_CANCELLED if cancelled else None,
    )


def explain_stop(state: RunState) -> str:
    """The reply to give when the loop ended without an answer from the model."""
    if state.stop_reason == STOP_MAX_STEPS:
        return (
            f"I stopped after {state.current_step} tool steps (the limit is {state.max_steps}) "
            "without reaching an answer."
        )
    if state.stop_reason == STOP_CANCELLED:
        return "The run was cancelled before an answer was written."
    return f"The run ended ({state.stop_reason}) before an answer was written."


async def finalize(state: RunState, ctx: RunContext) -> Update:
    """Write final_reply and stop_reason; close any tool call left without a result.

    A run cancelled between the agent and tools nodes still has the model's
    tool calls pending: they get "cancelled" results so the thread stays valid
    for its next run.
    """
    closing = [cancelled_result(c) for c in state.pending_tool_calls()]
    for result in closing:
        await ctx.journal.tool_result(state.run_id, result)
        ctx.sink.tool_end(result)
    last = state.last_message
    reply = ""
    if not closing and last is not None and last.role == common_pb2.ROLE_ASSISTANT:
        reply = last.content
    stop_reason = state.stop_reason or STOP_COMPLETED
    if not reply.strip():
        reply = explain_stop(state) if state.stop_reason else "The model returned an empty answer."
    return Update(
        messages=[tool_message(r) for r in closing],
        tool_results=closing,
        stop=True,
        stop_reason=stop_reason,
        final_reply=reply,
    )
