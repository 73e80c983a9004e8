"""The nodes of the loop: small async functions `(state, ctx) -> Update`.

A node reads the state, talks to one dependency and returns what changed; it
never decides where the run goes next (that is the graph's job, in graph.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import jsonschema

from agentloop.telemetry import Telemetry
from agentloop.v1 import agent_pb2, common_pb2, reasoner_pb2
from gateway.clients import ReasonerClient, ToolsClient
from gateway.context import trim
from gateway.events import EventSink
from gateway.hooks import HookContext, call_hooks
from gateway.journal import RunJournal
from gateway.loops import describe, detect_loop, rounds_of
from gateway.memory import MemoryStore, memory_instruction, rank
from gateway.state import (
    STOP_CANCELLED,
    STOP_COMPLETED,
    STOP_LOOP,
    STOP_MAX_STEPS,
    STOP_NEEDS_MORE_STEPS,
    STOP_PAUSED,
    RunState,
    Update,
)

T = TypeVar("T")

FINAL_ANSWER_TOOL = "final_answer"
CANCELLED_RESULT = "The run was cancelled before this tool call finished."
_TOOL_CHOICE_NONE = common_pb2.ToolChoice(mode=common_pb2.TOOL_CHOICE_MODE_NONE)
_TOOL_CHOICE_REQUIRED = common_pb2.ToolChoice(mode=common_pb2.TOOL_CHOICE_MODE_REQUIRED)
_TOOL_CHOICE_FINISH = common_pb2.ToolChoice(function_name=FINAL_ANSWER_TOOL)


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
    memories: MemoryStore | None = None
    telemetry: Telemetry = field(default_factory=Telemetry.noop)
    """Spans and metrics of this gateway process (node spans, step durations)."""

    def __post_init__(self) -> None:
        self.specs_by_name = {s.name: s for s in self.tool_specs}

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


def hook_context(state: RunState) -> HookContext:
    return HookContext(state.run_id, state.thread_id, state.user_id, state.current_step)


# --- init_state and memory_trigger -------------------------------------------------


async def init_state(state: RunState, ctx: RunContext) -> Update:
    """Add the new turn (and a new thread's seed history) to the conversation."""
    return Update(messages=list(ctx.new_messages))


async def memory_trigger(state: RunState, ctx: RunContext) -> Update:
    """Store "remember …" instructions as facts for the user; recall facts relevant to the question."""
    if not state.config.memory or ctx.memories is None:
        return Update(recalled=[])
    question = next((m.content for m in reversed(state.messages) if m.role == common_pb2.ROLE_USER), "")
    fact = memory_instruction(question)
    if fact is not None:
        await ctx.memories.add(state.user_id, fact)
        ctx.sink.decision("memory_stored", fact)
    return Update(recalled=await recall(state, ctx, question))


async def recall(state: RunState, ctx: RunContext, question: str) -> list[str]:
    if ctx.memories is None:
        return []
    facts = [m.text for m in rank(await ctx.memories.list(state.user_id), question)]
    if facts:
        ctx.sink.decision("memory_recalled", "; ".join(facts))
    return facts


# --- agent ---------------------------------------------------------------------------


def final_answer_spec(schema: dict[str, Any]) -> common_pb2.ToolSpec:
    """The finish tool of a structured-output run: its arguments ARE the answer."""
    return common_pb2.ToolSpec(
        name=FINAL_ANSWER_TOOL,
        description="Give the final answer: call this once, when you are done, with the answer object.",
        parameters_json_schema=json.dumps(schema),
    )


def _guidance(state: RunState) -> list[common_pb2.Message]:
    """One-time system messages for this call only: recalled facts and the flow-guidance hint."""
    extra = []
    if state.recalled:
        facts = "\n".join(f"- {fact}" for fact in state.recalled)
        extra.append(
            common_pb2.Message(
                role=common_pb2.ROLE_SYSTEM, content=f"Facts the user asked you to remember earlier:\n{facts}"
            )
        )
    if state.hint:
        extra.append(
            common_pb2.Message(
                role=common_pb2.ROLE_SYSTEM,
                content=f"Suggested next step: {state.suggested_next_step}. {state.hint}",
            )
        )
    return extra


async def _params(state: RunState, ctx: RunContext, with_tools: bool) -> reasoner_pb2.CompletionParams:
    cfg = state.config
    messages = trim(state.messages, cfg.context_budget_tokens)
    extra = _guidance(state)
    if extra:
        messages = [messages[0], *extra, *messages[1:]] if not state.hint else [*messages, *extra]
    if cfg.hooks:
        messages, changed = await call_hooks(cfg.hooks, "pre_reasoning", hook_context(state), list(messages))
        for name in changed:
            ctx.sink.decision("hook", f"{name} changed the messages sent to the model")
    params = reasoner_pb2.CompletionParams(model=cfg.model, messages=messages)
    specs = list(ctx.tool_specs)
    if cfg.output_schema is not None:
        specs.append(final_answer_spec(cfg.output_schema))
    if specs:
        # Tools stay declared even when disabled: endpoints need them to read
        # earlier tool calls, and an unchanged prefix keeps prompt caches warm.
        params.tools.extend(specs)
        if cfg.output_schema is not None:
            params.tool_choice.CopyFrom(_TOOL_CHOICE_REQUIRED if with_tools else _TOOL_CHOICE_FINISH)
        elif not with_tools:
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
    result = await ctx.unless_cancelled(work)
    if state.config.hooks:
        message, changed = await call_hooks(
            state.config.hooks, "post_reasoning", hook_context(state), result.message
        )
        for name in changed:
            ctx.sink.decision("hook", f"{name} changed the model's message")
        result.message.CopyFrom(message)
    return result


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

    At the step limit the model is called without tools (or, for structured
    output, made to call the finish tool) to answer from what it has
    (stop_reason max_steps); if it still asks for tools they are not started
    and the run says it needed more steps. The one-time hint is consumed here.
    Cancel abandons the call: nothing was decided yet.
    """
    mode = state.config.stream_mode
    structured = state.config.output_schema is not None
    clear = "" if state.hint else None  # the hint is one-time: consumed by this call
    try:
        if state.current_step >= state.max_steps:
            params = await _params(state, ctx, with_tools=False)
            result = await _call(
                state, ctx, params, stream=mode != agent_pb2.STREAM_MODE_NONE and not structured
            )
            if structured and result.message.tool_calls:
                only_finish = [c for c in result.message.tool_calls if c.name == FINAL_ANSWER_TOOL][:1]
                del result.message.tool_calls[:]
                result.message.tool_calls.extend(only_finish)
                return Update(
                    messages=[result.message],
                    llm_calls=1,
                    usage=result.usage,
                    hint=clear,
                    suggested_next_step=clear,
                )
            stop_reason = STOP_MAX_STEPS
            if result.message.tool_calls:
                stop_reason = STOP_NEEDS_MORE_STEPS
                names = ", ".join(c.name for c in result.message.tool_calls)
                ctx.sink.decision(
                    "remaining_steps",
                    f"no steps left (limit {state.max_steps}) for the tools the model asked for: {names}",
                )
            return Update(
                messages=[_answer(result)],
                llm_calls=1,
                usage=result.usage,
                stop=True,
                stop_reason=stop_reason,
                hint=clear,
                suggested_next_step=clear,
            )
        params = await _params(state, ctx, with_tools=True)
        result = await _call(state, ctx, params, stream=mode == agent_pb2.STREAM_MODE_ALL_STEPS)
        if result.message.tool_calls or mode != agent_pb2.STREAM_MODE_FINAL_ONLY or structured:
            return Update(
                messages=[result.message],
                llm_calls=1,
                usage=result.usage,
                hint=clear,
                suggested_next_step=clear,
            )
        # The planning call answered: generate the answer again, streamed, tools disabled.
        final = await _call(state, ctx, await _params(state, ctx, with_tools=False), stream=True)
        return Update(
            messages=[_answer(final)],
            llm_calls=2,
            usage=_sum_usage(result.usage, final.usage),
            hint=clear,
            suggested_next_step=clear,
        )
    except RunCancelled:
        return Update(stop=True, stop_reason=STOP_CANCELLED)


# --- tools ---------------------------------------------------------------------------


def tool_message(result: common_pb2.ToolResult) -> common_pb2.Message:
    """The tool message the model reads; errors are prefixed so the model can tell and recover."""
    content = result.content
    if result.is_error:
        kind = common_pb2.ToolErrorKind.Name(result.error_kind).removeprefix("TOOL_ERROR_KIND_").lower()
        content = f"ERROR ({kind}): {content}"
    return common_pb2.Message(
        role=common_pb2.ROLE_TOOL, content=content, tool_call_id=result.tool_call_id, name=result.name
    )


def _error_result(
    call: common_pb2.ToolCall, kind: common_pb2.ToolErrorKind.ValueType, content: str
) -> common_pb2.ToolResult:
    return common_pb2.ToolResult(
        tool_call_id=call.id, name=call.name, content=content, is_error=True, error_kind=kind
    )


def cancelled_result(call: common_pb2.ToolCall) -> common_pb2.ToolResult:
    """The result a call gets when the run is cancelled before it finished."""
    return _error_result(call, common_pb2.TOOL_ERROR_KIND_CANCELLED, CANCELLED_RESULT)


def needs_approval(state: RunState, ctx: RunContext, call: common_pb2.ToolCall) -> bool:
    """Whether a call waits for a human: the tool says so, or the run names it (or "*")."""
    spec = ctx.specs_by_name.get(call.name)
    wanted = state.config.require_approval
    return (spec is not None and spec.requires_approval) or call.name in wanted or "*" in wanted


def injected_context(
    state: RunState, calls: list[common_pb2.ToolCall], ctx: RunContext
) -> common_pb2.InjectedContext:
    """Values for injected parameters, built only when a called tool declares some (it costs a copy)."""
    if not any(ctx.specs_by_name.get(c.name, common_pb2.ToolSpec()).injected_parameters for c in calls):
        return common_pb2.InjectedContext()
    conversation = [
        {
            "role": common_pb2.Role.Name(m.role).removeprefix("ROLE_").lower(),
            "content": m.content,
            **({"tool_call_id": m.tool_call_id} if m.tool_call_id else {}),
            **(
                {
                    "tool_calls": [
                        {"id": c.id, "name": c.name, "arguments": c.arguments_json} for c in m.tool_calls
                    ]
                }
                if m.tool_calls
                else {}
            ),
        }
        for m in state.messages[1:]
    ]
    metadata = {
        "step": state.current_step,
        "max_steps": state.max_steps,
        "tools_used": state.tools_used,
        "llm_calls": state.llm_calls,
    }
    return common_pb2.InjectedContext(
        user_id=state.user_id,
        thread_id=state.thread_id,
        run_id=state.run_id,
        conversation_json=json.dumps(conversation, ensure_ascii=False),
        run_metadata_json=json.dumps(metadata),
    )


class _Round:
    """Bookkeeping of one tool round: results by call id, in completion order.

    Results that stream in while a write is in flight are persisted together
    (group commit): a result is still written before it is announced, but a
    round of parallel calls costs one or two transactions instead of one each.
    """

    def __init__(self, state: RunState, ctx: RunContext) -> None:
        self.state = state
        self.ctx = ctx
        self.finished: dict[str, common_pb2.ToolResult] = {}
        self.order: list[common_pb2.ToolResult] = []
        self._pending: list[common_pb2.ToolResult] = []
        self._flusher: asyncio.Task[None] | None = None

    async def _hooked(self, result: common_pb2.ToolResult) -> common_pb2.ToolResult:
        hooks = self.state.config.hooks
        if not hooks:
            return result
        results, changed = await call_hooks(hooks, "post_acting", hook_context(self.state), [result])
        for name in changed:
            self.ctx.sink.decision(
                "hook", f"{name} changed the result of {result.name} ({result.tool_call_id})"
            )
        return results[0]

    def _announce(self, result: common_pb2.ToolResult) -> None:
        self.finished[result.tool_call_id] = result
        self.order.append(result)
        self.ctx.sink.tool_end(result)

    async def finish(self, result: common_pb2.ToolResult) -> None:
        """Apply post-acting hooks, persist, then announce one result."""
        result = await self._hooked(result)
        await self.ctx.journal.tool_results(self.state.run_id, [result])
        self._announce(result)

    def submit(self, result: common_pb2.ToolResult) -> None:
        """Queue a streamed result; it is persisted (with any others waiting) and then announced."""
        self._pending.append(result)
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush())

    async def _flush(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            batch = [await self._hooked(r) for r in batch]
            await self.ctx.journal.tool_results(self.state.run_id, batch)
            for result in batch:
                self._announce(result)

    async def drain(self) -> None:
        """Wait until every submitted result is persisted and announced (re-raising a store failure)."""
        while self._flusher is not None:
            flusher = self._flusher
            await flusher
            if self._flusher is flusher:
                self._flusher = None


async def _execute(state: RunState, ctx: RunContext, calls: list[common_pb2.ToolCall], rnd: _Round) -> None:
    stream = ctx.tools.execute(
        calls,
        state.config.tool_timeout_s,
        ctx.timeout(),
        scope=state.run_id,
        serial=state.config.serial_tools,
        injected=injected_context(state, calls, ctx),
    )
    async for event in stream:
        if event.HasField("started"):
            started = event.started
            ctx.sink.tool_start(started.name, started.arguments_json, started.tool_call_id)
        else:
            rnd.submit(event.finished)
    await rnd.drain()


def _check_final_answer(
    state: RunState, call: common_pb2.ToolCall
) -> tuple[common_pb2.ToolResult, str | None]:
    """Check a final_answer call against the run's schema: (result for the model, canonical JSON if valid)."""
    assert state.config.output_schema is not None
    try:
        value = json.loads(call.arguments_json or "{}")
    except ValueError as exc:
        message = (
            f"final_answer arguments are not valid JSON: {exc}. Call final_answer again with a JSON object."
        )
        return _error_result(call, common_pb2.TOOL_ERROR_KIND_MALFORMED_ARGUMENTS, message), None
    validator = jsonschema.Draft202012Validator(state.config.output_schema)
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    if errors:
        problems = "; ".join(f"$.{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:5])
        message = (
            f"The answer does not match the required schema: {problems}. Fix it and call final_answer again."
        )
        return _error_result(call, common_pb2.TOOL_ERROR_KIND_INVALID_ARGUMENTS, message), None
    accepted = common_pb2.ToolResult(tool_call_id=call.id, name=call.name, content="Answer accepted.")
    return accepted, json.dumps(value, ensure_ascii=False, sort_keys=True)


def _approval_verdicts(
    state: RunState, calls: list[common_pb2.ToolCall]
) -> tuple[list[common_pb2.ToolCall], dict[str, agent_pb2.ApprovalDecision]]:
    decisions = {cid: agent_pb2.ApprovalDecision.FromString(raw) for cid, raw in state.approvals.items()}
    return [c for c in calls if c.id not in decisions], decisions


async def tools(state: RunState, ctx: RunContext) -> Update:
    """Run the last assistant message's tool calls; every call gets exactly one result.

    In order: calls that need a human decision pause the run (interrupt)
    until Resume brings one; pre-acting hooks see the calls; the finish tool
    of a structured-output run is validated here; the rest run in parallel
    (or one by one with serial_tools) on the ToolService, each result
    persisted as it arrives, so after a crash only unfinished calls run again.
    Afterwards (seed 001's update_state_after_tool) the round's outcome sets
    the flow-guidance hint and loop detection may stop the run.
    """
    calls = state.pending_tool_calls()
    rnd = _Round(state, ctx)
    for call in calls:
        if (done := ctx.recorded_results.get(call.id)) is not None:
            rnd.finished[call.id] = done
            rnd.order.append(done)
            ctx.sink.tool_end(done)
    todo = [c for c in calls if c.id not in rnd.finished]

    gated = [c for c in todo if needs_approval(state, ctx, c)]
    undecided, decisions = _approval_verdicts(state, gated)
    if undecided:
        names = ", ".join(sorted({c.name for c in undecided}))
        ctx.sink.interrupt(undecided, f"approval required for {names}")
        ctx.sink.decision("approval", f"waiting for a decision on {len(undecided)} call(s): {names}")
        return Update(awaiting_approval=True, stop_reason=STOP_PAUSED)

    runnable: list[common_pb2.ToolCall] = []
    structured_output: str | None = None
    limits = state.config
    for position, call in enumerate(todo):
        if position >= limits.max_tool_calls_per_step:
            limit = limits.max_tool_calls_per_step
            message = f"Too many tool calls in one step (limit {limit}); call fewer at once."
            await rnd.finish(_error_result(call, common_pb2.TOOL_ERROR_KIND_INVALID_ARGUMENTS, message))
            continue
        if len(call.arguments_json.encode()) > limits.max_argument_bytes:
            message = f"The arguments are larger than {limits.max_argument_bytes} bytes; send less data."
            await rnd.finish(_error_result(call, common_pb2.TOOL_ERROR_KIND_INVALID_ARGUMENTS, message))
            continue
        decision = decisions.get(call.id)
        if decision is not None and decision.verdict == agent_pb2.ApprovalDecision.VERDICT_REJECT:
            reason = decision.reason or "no reason given"
            await rnd.finish(
                _error_result(call, common_pb2.TOOL_ERROR_KIND_REJECTED, f"Rejected by a person: {reason}")
            )
            continue
        if state.config.output_schema is not None and call.name == FINAL_ANSWER_TOOL:
            result, valid = _check_final_answer(state, call)
            if valid is None:
                ctx.sink.decision("structured_output_invalid", result.content)
            structured_output = structured_output or valid
            await rnd.finish(result)
            continue
        if decision is not None and decision.verdict == agent_pb2.ApprovalDecision.VERDICT_EDIT:
            edited = common_pb2.ToolCall()
            edited.CopyFrom(call)
            edited.arguments_json = decision.arguments_json
            call = edited
        runnable.append(call)
    if runnable and state.config.hooks:
        runnable, changed = await call_hooks(state.config.hooks, "pre_acting", hook_context(state), runnable)
        for name in changed:
            ctx.sink.decision("hook", f"{name} changed the tool calls before they ran")

    cancelled = False
    if runnable:
        try:
            await ctx.unless_cancelled(_execute(state, ctx, runnable, rnd))
        except RunCancelled:
            cancelled = True
        await rnd.drain()  # results already received are persisted and announced, even on cancel
    for call in calls:
        if call.id not in rnd.finished:
            # Cancelled, or dropped by a pre-acting hook: every call still gets a result.
            await rnd.finish(cancelled_result(call))

    update = Update(
        messages=[tool_message(rnd.finished[c.id]) for c in calls],
        tool_calls=calls,
        tool_results=rnd.order,
        steps=1,
        awaiting_approval=False if state.awaiting_approval else None,
        approvals={} if state.approvals else None,
    )
    if cancelled:
        update.stop, update.stop_reason = True, STOP_CANCELLED
        return update
    if structured_output is not None:
        update.stop, update.stop_reason = True, STOP_COMPLETED
        update.structured_output_json = structured_output
        return update
    if state.current_step + 1 > state.max_steps:
        # Only a structured-output run gets a round at the limit (its forced final_answer);
        # an answer that still does not validate ends the run rather than extending it.
        update.stop, update.stop_reason = True, STOP_MAX_STEPS
        return update
    _after_round(state, ctx, calls, rnd, update)
    return update


def _after_round(
    state: RunState, ctx: RunContext, calls: list[common_pb2.ToolCall], rnd: _Round, update: Update
) -> None:
    """Flow guidance and loop detection from the round just finished (seed 001, seed 000 §6)."""
    if state.config.flow_guidance:
        rule = None
        for call in calls:
            result = rnd.finished[call.id]
            on = "error" if result.is_error else "success"
            spec = ctx.specs_by_name.get(call.name)
            for candidate in spec.next_steps if spec is not None else ():
                if candidate.on == on:
                    rule = candidate
        if rule is not None:
            update.suggested_next_step, update.hint = rule.next_step, rule.hint
            ctx.sink.decision("flow_guidance", f"{rule.next_step}: {rule.hint}")
        elif state.hint or state.suggested_next_step:
            update.suggested_next_step, update.hint = "", ""
    rounds = rounds_of([*state.run_messages(), *update.messages])
    period = detect_loop(rounds, state.config.loops)
    if period:
        detail = describe(rounds, period)
        ctx.sink.decision("loop_detected", detail)
        update.stop, update.stop_reason = True, STOP_LOOP
        update.final_reply = f"I stopped because {detail}. Repeating them would not get closer to an answer."


# --- finalize ------------------------------------------------------------------------


def explain_stop(state: RunState) -> str:
    """The reply to give when the loop ended without an answer from the model."""
    if state.stop_reason == STOP_MAX_STEPS:
        return (
            f"I stopped after {state.current_step} tool steps (the limit is {state.max_steps}) "
            "without reaching an answer."
        )
    if state.stop_reason == STOP_NEEDS_MORE_STEPS:
        return (
            f"I need more steps to finish this request: the limit of {state.max_steps} tool steps "
            "was reached while more tool calls were still needed."
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
    stop_reason = state.stop_reason or STOP_COMPLETED
    reply = state.final_reply
    if not reply:
        last = state.last_message
        if state.structured_output_json:
            texts = [
                m.content for m in state.run_messages() if m.role == common_pb2.ROLE_ASSISTANT and m.content
            ]
            reply = texts[-1] if texts else state.structured_output_json
        elif not closing and last is not None and last.role == common_pb2.ROLE_ASSISTANT:
            reply = last.content
    if not reply.strip():
        reply = explain_stop(state) if state.stop_reason else "The model returned an empty answer."
    if state.stop_reason == STOP_NEEDS_MORE_STEPS and "more steps" not in reply:
        reply = f"{reply}\n\n{explain_stop(state)}".strip()
    return Update(
        messages=[tool_message(r) for r in closing],
        tool_results=closing,
        stop=True,
        stop_reason=stop_reason,
        final_reply=reply,
    )
