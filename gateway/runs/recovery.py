"""How a run that cannot go on still ends, and what a takeover tells clients.

Rebuilding a run's state from its checkpoint is gateway/journal/convert.py's job.

Two situations leave a run without its usual ending. A fault nobody
classified (a database error, a bug) escapes the graph: the run must still
end FAILED with one error event and a thread the next run can use, even
though the write that failed may have left the thread with tool calls that
have no results. And a gateway takes over a run another one stopped
executing: its clients must learn where it picked up and which event numbers
they will never see.
"""

from __future__ import annotations

import logging

from agentloop.v1 import agent_pb2, common_pb2
from gateway.journal.closing import could_not_run, tool_message, unanswered_calls
from gateway.journal.convert import code_value
from gateway.journal.run_journal import describe_failure
from gateway.journal.state import RunFailure, RunState, StopReason
from gateway.loop.run_context import RunContext
from gateway.store.base import CheckpointRow, LeaseLost, RunRow, RunStatus, Store

log = logging.getLogger(__name__)

FAULT_NODE = "gateway"
"""The node named by the error event of a run ended by an unexpected fault."""


def resumed_note(
    row: RunRow,
    checkpoint: CheckpointRow | None,
    state: RunState,
    recorded: dict[str, common_pb2.ToolResult],
) -> str:
    """The `resumed` decision's detail: where the run picks up, what was lost, which calls are open."""
    where = "the start"
    if checkpoint is not None:
        where = f"checkpoint {checkpoint.index} (next node {checkpoint.record.next_node or 'END'})"
    base = row.next_sequence_base
    if base > row.last_sequence:
        lost = f"events {row.last_sequence + 1}..{base} were lost with the previous owner (never reused)"
    else:
        lost = f"no event after {row.last_sequence} was lost"
    note = f"resumed from {where}; {lost}"
    open_calls = [c.id for c in state.pending_tool_calls() if c.id not in recorded]
    done_calls = [c.id for c in state.pending_tool_calls() if c.id in recorded]
    if open_calls:
        note += f"; tool calls run again: {', '.join(open_calls)}"
    if done_calls:
        note += f"; tool calls already finished (their tool_end follows): {', '.join(done_calls)}"
    return note


async def end_after_fault(store: Store, state: RunState, ctx: RunContext, message: str) -> bool:
    """End the run FAILED with one error event after a fault escaped the graph; True once stored.

    Closes the stored thread's unanswered tool calls (what the store has, not
    the state: the failed write may not have stored the state's last
    messages). Falls back to forcing the status when even that write fails.
    The error event reaches clients only once the store holds it (like
    `final`): when neither write succeeds (the database is away, another
    gateway took the run), nobody is told the run failed, and False says the
    run's ending is for whoever continues it.
    """
    code = "INTERNAL"
    state.stop, state.stop_reason = True, StopReason.ERROR
    state.error = RunFailure(code, message, FAULT_NODE)
    ctx.sink.error(code, message, FAULT_NODE)
    try:
        history = await store.thread_messages(state.thread_id, user_id=state.user_id)
        # A call that finished keeps its result (stored, or carried to the next write, which stores
        # it first); only calls that never ran get an error.
        recorded = {**ctx.journal.carried_results, **await store.tool_results(state.run_id)}
        answers = [
            recorded[call.id] if call.id in recorded else could_not_run(call, message)
            for call in unanswered_calls(history)
        ]
        closing = [a for a in answers if a.tool_call_id not in recorded]
        await ctx.journal.tool_results(state.run_id, closing)
        messages = [tool_message(r) for r in answers]
        await ctx.journal.checkpoint(state, FAULT_NODE, "", messages, RunStatus.FAILED)
        return True
    except LeaseLost:
        return False  # another gateway has the run now and ends it
    except Exception as exc:
        log.error("run %s: could not record its failure (%s)", state.run_id, describe_failure(exc))
    if not await _force_failed(store, state.run_id, ctx.journal.owner, ctx.sink.sequence, code, message):
        return False
    ctx.sink.stored_upto(ctx.sink.sequence)
    return True


async def end_unlaunchable(store: Store, run_id: str, exc: BaseException) -> None:
    """End a run this gateway claimed but could not rebuild (so no orphan scan retries it forever)."""
    row = await store.get_run(run_id)
    if row is None:
        return
    message = describe_failure(exc)
    await _force_failed(store, run_id, row.owner, row.next_sequence_base + 1, "INTERNAL", message)


async def _force_failed(
    store: Store, run_id: str, owner: str | None, sequence: int, code: str, message: str
) -> bool:
    """FAILED with its error event, in one compare-and-set, while `owner` holds the run; True if written."""
    try:
        row = await store.get_run(run_id)
        if row is None or row.status != RunStatus.RUNNING or not owner or row.owner != owner:
            return False
        event = agent_pb2.RunEvent(run_id=run_id, thread_id=row.thread_id, sequence=sequence)
        event.error.code, event.error.message, event.error.node = code_value(code), message, FAULT_NODE
        return await store.end_run(run_id, RunStatus.FAILED, [event], owner=owner)
    except Exception as exc:
        # Its lease is not renewed: an orphan scan takes it over later.
        log.error("run %s: could not end it (%s)", run_id, describe_failure(exc))
        return False
