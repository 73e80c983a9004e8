"""The tools node: one round of the model's tool calls, from approval gate to loop check.

Phases, in order (seed 001's prepare_tool_input → tools → update_state_after_tool), each a
function: `replay_recorded` (results a previous owner persisted), `approval_gate` (calls
that need a human pause the run), `screen` (per-step limits, rejections, a structured-output
run's finish tool, edited arguments, pre-acting hooks), `run_batch` (the ToolService, each
result persisted before it is announced), `close_unanswered` and `conclude` (the round's
update: the flow-guidance hint, and loop detection may stop the run).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass, field

from agentloop.kernel.jsonlimits import STRUCT_MAX_DEPTH, loads_bounded
from agentloop.kernel.untrusted_schema import SchemaRefused, compile_schema
from agentloop.v1 import agent_pb2, common_pb2
from gateway.journal.closing import cancelled_result, error_result, tool_message
from gateway.journal.state import (
    RunState,
    StopReason,
    Update,
)
from gateway.loop.run_context import FINAL_ANSWER_TOOL, RunCancelled, RunContext, hook_context
from gateway.policies.hooks import call_hooks
from gateway.policies.loop_detection import describe, detect_loop, rounds_of

# --- tools ---------------------------------------------------------------------------


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


GROUP_LINGER_S = 0.005
"""Longest a streamed tool result waits for the rest of its batch before it is persisted."""


class _Round:
    """Bookkeeping of one tool round: results by call id, in completion order.

    Results are persisted in groups (group commit): a result is still written
    before it is announced, but a round of parallel calls costs one
    transaction instead of one each. A group is written as soon as every
    result of the running batch is in, or GROUP_LINGER_S after its first
    result, whichever comes first: parallel calls rarely finish in the same
    instant (each result is its own gRPC message), and writing on the first
    one left the next ones to a second and third transaction. The group that
    completes a parallel batch is not written on its own: the checkpoint that
    ends the node records it (`RunJournal.record_with_next_checkpoint`), and
    its tool_end events wait for that commit.
    """

    def __init__(self, state: RunState, ctx: RunContext) -> None:
        self.state = state
        self.ctx = ctx
        self.finished: dict[str, common_pb2.ToolResult] = {}
        self.order: list[common_pb2.ToolResult] = []
        self._pending: list[common_pb2.ToolResult] = []
        self._flusher: asyncio.Task[None] | None = None
        self._awaited = 0
        self._batch = False
        self._all_in = asyncio.Event()
        self._all_in.set()

    def expect(self, count: int) -> None:
        """`count` results will stream in (a parallel batch): a group waits for them, briefly."""
        self._awaited = count
        self._batch = True
        if count > 1:
            self._all_in.clear()

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
        """Queue a streamed result: persisted with any others waiting (the batch's last: by the
        node's checkpoint), announced, and delivered to clients once stored."""
        self._pending.append(result)
        self._awaited -= 1
        if self._awaited <= 0:
            self._all_in.set()
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush())

    async def _flush(self) -> None:
        if not self._all_in.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._all_in.wait(), GROUP_LINGER_S)
        while self._pending:
            batch, self._pending = self._pending, []
            batch = [await self._hooked(r) for r in batch]
            if self._batch and self._awaited <= 0 and not self._pending:
                self.ctx.journal.record_with_next_checkpoint(batch)  # the batch's last: see the class
            else:
                await self.ctx.journal.tool_results(self.state.run_id, batch)
            for result in batch:
                self._announce(result)

    async def drain(self) -> None:
        """Wait until every submitted result is persisted and announced (re-raising a store failure).

        A cancelled waiter leaves the flusher running: a write that may have
        committed is always announced, and a later drain waits for it.
        """
        while self._flusher is not None:
            flusher = self._flusher
            await asyncio.shield(flusher)
            if self._flusher is flusher:
                self._flusher = None


async def _execute(state: RunState, ctx: RunContext, calls: list[common_pb2.ToolCall], rnd: _Round) -> None:
    """Run the calls on the ToolService, announcing each start and (once persisted) each end.

    A parallel round's results are persisted in groups while later ones stream
    in. A serial round persists and announces each result before the next
    call's start is announced, so its clients see start, end, start, end.
    """
    serial = state.config.serial_tools
    if not serial:
        rnd.expect(len(calls))
    stream = ctx.tools.execute(
        calls,
        state.config.tool_timeout_s,
        ctx.timeout(),
        scope=f"{state.run_id}/{state.current_step}",
        serial=serial,
        injected=injected_context(state, calls, ctx),
    )
    async for event in stream:
        if event.HasField("started"):
            started = event.started
            ctx.sink.tool_start(started.name, started.arguments_json, started.tool_call_id)
        else:
            rnd.submit(event.finished)
            if serial:
                await rnd.drain()
    await rnd.drain()


def _check_final_answer(
    state: RunState, call: common_pb2.ToolCall
) -> tuple[common_pb2.ToolResult, str | None]:
    """Check a final_answer call against the run's schema: (result for the model, canonical JSON if valid)."""
    assert state.config.output_schema is not None
    try:
        # The answer travels as a Struct (RunFinal.structured_output): no deeper than one can decode.
        value = loads_bounded(
            call.arguments_json or "{}", max_depth=STRUCT_MAX_DEPTH, what="final_answer arguments"
        )
    except ValueError as exc:
        message = (
            f"final_answer arguments are not valid JSON: {exc}. Call final_answer again with a JSON object."
        )
        return error_result(call, common_pb2.TOOL_ERROR_KIND_MALFORMED_ARGUMENTS, message), None
    try:
        # Checked when the run was created; compiled here so that nothing it names is ever fetched.
        errors = compile_schema(state.config.output_schema).errors(value)
    except SchemaRefused as exc:
        message = f"The answer could not be checked against the required schema: {exc}."
        return error_result(call, common_pb2.TOOL_ERROR_KIND_INVALID_ARGUMENTS, message), None
    errors.sort(key=lambda e: list(e.absolute_path))
    if errors:
        problems = "; ".join(f"$.{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:5])
        message = (
            f"The answer does not match the required schema: {problems}. Fix it and call final_answer again."
        )
        return error_result(call, common_pb2.TOOL_ERROR_KIND_INVALID_ARGUMENTS, message), None
    accepted = common_pb2.ToolResult(
        tool_call_id=call.id,
        name=call.name,
        content="Answer accepted.",
        error_kind=common_pb2.TOOL_ERROR_KIND_NONE,
    )
    return accepted, json.dumps(value, ensure_ascii=False, sort_keys=True)


async def tools(state: RunState, ctx: RunContext) -> Update:
    """Run the last assistant message's tool calls; every call gets exactly one result.

    The phases, each a function below: `replay_recorded` (results a previous
    owner persisted), `approval_gate` (calls that need a human pause the run
    until Resume brings a decision), `screen` (per-step limits, rejections,
    the finish tool of a structured-output run, edited arguments, pre-acting
    hooks), `run_batch` (the rest in parallel, or one by one with
    serial_tools, on the ToolService, each result persisted as it arrives or
    with the node's checkpoint, so after a crash only calls without a stored
    result run again), `close_unanswered` and
    `conclude` (seed 001's update_state_after_tool: the round's outcome sets
    the flow-guidance hint and loop detection may stop the run).
    """
    calls = state.pending_tool_calls()
    rnd = _Round(state, ctx)
    todo = replay_recorded(ctx, calls, rnd)
    if (paused := approval_gate(state, ctx, todo)) is not None:
        return paused
    screened = await screen(state, ctx, todo, rnd)
    cancelled = await run_batch(state, ctx, screened.runnable, rnd)
    await close_unanswered(calls, rnd)
    return conclude(state, ctx, calls, rnd, cancelled=cancelled, structured_output=screened.structured_output)


def replay_recorded(
    ctx: RunContext, calls: list[common_pb2.ToolCall], rnd: _Round
) -> list[common_pb2.ToolCall]:
    """Announce results already persisted (a resumed run); returns the calls still to do."""
    for call in calls:
        if (done := ctx.recorded_results.get(call.id)) is not None:
            rnd.finished[call.id] = done
            rnd.order.append(done)
            ctx.sink.tool_end(done)
    return [c for c in calls if c.id not in rnd.finished]


def approval_gate(state: RunState, ctx: RunContext, todo: list[common_pb2.ToolCall]) -> Update | None:
    """The pause (an interrupt) when a call needs a human decision the run does not have yet."""
    undecided = [c for c in todo if needs_approval(state, ctx, c) and c.id not in state.approvals]
    if not undecided:
        return None
    names = ", ".join(sorted({c.name for c in undecided}))
    ctx.sink.interrupt(undecided, f"approval required for {names}")
    ctx.sink.decision("approval", f"waiting for a decision on {len(undecided)} call(s): {names}")
    return Update(awaiting_approval=True, stop_reason=StopReason.PAUSED)


@dataclass
class Screened:
    """What screening leaves: the calls to run and a validated structured answer, if one came."""

    runnable: list[common_pb2.ToolCall] = field(default_factory=list)
    structured_output: str | None = None


def refusal(state: RunState, position: int, call: common_pb2.ToolCall) -> common_pb2.ToolResult | None:
    """The error result of a call that must not run (limits, a person's rejection); None if it may."""
    limits = state.config
    if position >= limits.max_tool_calls_per_step:
        message = (
            f"Too many tool calls in one step (limit {limits.max_tool_calls_per_step}); call fewer at once."
        )
        return error_result(call, common_pb2.TOOL_ERROR_KIND_INVALID_ARGUMENTS, message)
    if len(call.arguments_json.encode()) > limits.max_argument_bytes:
        message = f"The arguments are larger than {limits.max_argument_bytes} bytes; send less data."
        return error_result(call, common_pb2.TOOL_ERROR_KIND_INVALID_ARGUMENTS, message)
    decision = state.approvals.get(call.id)
    if decision is not None and decision.verdict == agent_pb2.ApprovalDecision.VERDICT_REJECT:
        reason = decision.reason or "no reason given"
        return error_result(call, common_pb2.TOOL_ERROR_KIND_REJECTED, f"Rejected by a person: {reason}")
    return None


def as_approved(state: RunState, call: common_pb2.ToolCall) -> common_pb2.ToolCall:
    """The call with the arguments a person edited it to, or unchanged."""
    decision = state.approvals.get(call.id)
    if decision is None or decision.verdict != agent_pb2.ApprovalDecision.VERDICT_EDIT:
        return call
    edited = common_pb2.ToolCall()
    edited.CopyFrom(call)
    edited.arguments_json = decision.arguments_json
    return edited


async def screen(state: RunState, ctx: RunContext, todo: list[common_pb2.ToolCall], rnd: _Round) -> Screened:
    """Answer the calls that must not run, check final_answer, apply edits and pre-acting hooks."""
    out = Screened()
    for position, call in enumerate(todo):
        if (refused := refusal(state, position, call)) is not None:
            await rnd.finish(refused)
        elif state.config.output_schema is not None and call.name == FINAL_ANSWER_TOOL:
            result, valid = _check_final_answer(state, call)
            if valid is None:
                ctx.sink.decision("structured_output_invalid", result.content)
            out.structured_output = out.structured_output or valid
            await rnd.finish(result)
        else:
            out.runnable.append(as_approved(state, call))
    if out.runnable and state.config.hooks:
        out.runnable, changed = await call_hooks(
            state.config.hooks, "pre_acting", hook_context(state), out.runnable
        )
        for name in changed:
            ctx.sink.decision("hook", f"{name} changed the tool calls before they ran")
    return out


async def run_batch(
    state: RunState, ctx: RunContext, runnable: list[common_pb2.ToolCall], rnd: _Round
) -> bool:
    """Run the calls on the ToolService; True when a Cancel stopped them."""
    if not runnable:
        return False
    cancelled = False
    try:
        await ctx.unless_cancelled(_execute(state, ctx, runnable, rnd))
    except RunCancelled:
        cancelled = True
    await rnd.drain()  # results already received are persisted and announced, even on cancel
    return cancelled


async def close_unanswered(calls: list[common_pb2.ToolCall], rnd: _Round) -> None:
    """Cancelled, or dropped by a pre-acting hook: every call still gets a result."""
    for call in calls:
        if call.id not in rnd.finished:
            await rnd.finish(cancelled_result(call))


def conclude(
    state: RunState,
    ctx: RunContext,
    calls: list[common_pb2.ToolCall],
    rnd: _Round,
    *,
    cancelled: bool,
    structured_output: str | None,
) -> Update:
    """The round's update: its messages, and whether it ends the run (cancel, answer, limit, loop)."""
    update = Update(
        messages=[tool_message(rnd.finished[c.id]) for c in calls],
        tool_calls=calls,
        tool_results=rnd.order,
        steps=1,
        awaiting_approval=False if state.awaiting_approval else None,
        approvals={} if state.approvals else None,
    )
    if cancelled:
        update.stop, update.stop_reason = True, StopReason.CANCELLED
    elif structured_output is not None:
        update.stop, update.stop_reason = True, StopReason.COMPLETED
        update.structured_output_json = structured_output
    elif state.current_step + 1 > state.max_steps:
        # Only a structured-output run gets a round at the limit (its forced final_answer);
        # an answer that still does not validate ends the run rather than extending it.
        update.stop, update.stop_reason = True, StopReason.MAX_STEPS
    else:
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
            trigger = (
                common_pb2.NEXT_STEP_TRIGGER_ERROR
                if result.is_error
                else common_pb2.NEXT_STEP_TRIGGER_SUCCESS
            )
            spec = ctx.specs_by_name.get(call.name)
            for candidate in spec.next_steps if spec is not None else ():
                if candidate.trigger == trigger:
                    rule = candidate
        if rule is not None:
            update.suggested_next_step, update.hint = rule.next_step, rule.hint
            ctx.sink.decision("flow_guidance", f"{rule.next_step}: {rule.hint}")
        elif state.hint or state.suggested_next_step:
            update.suggested_next_step, update.hint = "", ""
    rounds = rounds_of([*state.run_messages(), *update.messages])
    loop = detect_loop(rounds, state.config.loops, ctx.specs_by_name)
    if loop is not None:
        detail = describe(loop)
        ctx.sink.decision("loop_detected", detail)
        update.stop, update.stop_reason = True, StopReason.LOOP_DETECTED
        update.final_reply = f"I stopped because {detail}. Repeating them would not get closer to an answer."
