"""The tools node's phases, one at a time, in process (fake ToolService, SQLite store)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

from agentloop.v1 import agent_pb2, common_pb2
from gateway.journal import closing
from gateway.journal.state import StopReason, Update
from gateway.loop import acting
from gateway.loop.acting import (
    _Round,
    approval_gate,
    as_approved,
    close_unanswered,
    conclude,
    refusal,
    replay_recorded,
    run_batch,
    screen,
    tools,
)
from gateway.loop.run_context import FINAL_ANSWER_TOOL
from tests.support.waiting import assert_eventually
from tests.unit.fakes import FakeTools, Harness, asks, call, kinds, new_run

__all__ = ["new_run"]

NewRun = Callable[..., Awaitable[Harness]]
Verdict = agent_pb2.ApprovalDecision.Verdict


def decided(call_id: str, verdict: Verdict.ValueType, **fields: str) -> agent_pb2.ApprovalDecision:
    return agent_pb2.ApprovalDecision(tool_call_id=call_id, verdict=verdict, **fields)


def result(call_id: str, content: str) -> common_pb2.ToolResult:
    return common_pb2.ToolResult(tool_call_id=call_id, name="add", content=content)


async def test_replay_announces_recorded_results_and_leaves_the_rest(new_run: NewRun) -> None:
    h = await new_run()
    h.ctx.recorded_results = {"c1": result("c1", "4")}
    rnd = _Round(h.state, h.ctx)
    todo = replay_recorded(h.ctx, [call("c1", "add"), call("c2", "add")], rnd)
    assert [c.id for c in todo] == ["c2"]
    assert rnd.order == [result("c1", "4")]
    assert kinds(h.pending()) == ["tool_end"]


async def test_approval_gate_pauses_for_undecided_calls_only(new_run: NewRun) -> None:
    h = await new_run(require_approval=frozenset({"delete"}))
    todo = [call("c1", "delete"), call("c2", "add")]
    paused = approval_gate(h.state, h.ctx, todo)
    assert paused == Update(awaiting_approval=True, stop_reason=StopReason.PAUSED)
    interrupt = [e.interrupt for e in h.pending() if e.WhichOneof("event") == "interrupt"]
    assert [c.id for c in interrupt[0].pending] == ["c1"]
    h.state.approvals = {"c1": decided("c1", agent_pb2.ApprovalDecision.VERDICT_APPROVE)}
    assert approval_gate(h.state, h.ctx, todo) is None


async def test_refusal_names_limits_and_a_persons_rejection(new_run: NewRun) -> None:
    h = await new_run(max_tool_calls_per_step=1, max_argument_bytes=10)
    small, large = call("c1", "add", "{}"), call("c2", "add", json.dumps({"text": "x" * 20}))
    assert refusal(h.state, 0, small) is None
    too_many = refusal(h.state, 1, small)
    assert too_many is not None
    assert "Too many tool calls" in too_many.content
    too_large = refusal(h.state, 0, large)
    assert too_large is not None
    assert "larger than 10 bytes" in too_large.content
    h.state.approvals = {"c1": decided("c1", agent_pb2.ApprovalDecision.VERDICT_REJECT, reason="not today")}
    rejected = refusal(h.state, 0, small)
    assert rejected is not None
    assert (rejected.error_kind, rejected.content) == (
        common_pb2.TOOL_ERROR_KIND_REJECTED,
        "Rejected by a person: not today",
    )


async def test_an_edit_decision_replaces_the_arguments(new_run: NewRun) -> None:
    h = await new_run()
    original = call("c1", "add", '{"a": 1}')
    assert as_approved(h.state, original) is original
    h.state.approvals = {
        "c1": decided("c1", agent_pb2.ApprovalDecision.VERDICT_EDIT, arguments_json='{"a": 2}')
    }
    edited = as_approved(h.state, original)
    assert (edited.id, edited.arguments_json, original.arguments_json) == ("c1", '{"a": 2}', '{"a": 1}')


async def test_screen_checks_final_answer_and_passes_the_rest_on(new_run: NewRun) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    h = await new_run(output_schema=schema)
    rnd = _Round(h.state, h.ctx)
    bad, good = call("f1", FINAL_ANSWER_TOOL, '{"n": "four"}'), call("f2", FINAL_ANSWER_TOOL, '{"n": 4}')
    screened = await screen(h.state, h.ctx, [bad, call("c1", "add"), good], rnd)
    assert [c.id for c in screened.runnable] == ["c1"]
    assert screened.structured_output == '{"n": 4}'
    assert rnd.finished["f1"].is_error
    assert rnd.finished["f2"].content == "Answer accepted."
    # Both answers were persisted before they were announced.
    assert set(await h.store.tool_results(h.state.run_id)) == {"f1", "f2"}
    decisions = [e.decision.kind for e in h.pending() if e.WhichOneof("event") == "decision"]
    assert decisions == [agent_pb2.DECISION_KIND_STRUCTURED_OUTPUT_INVALID]


async def test_run_batch_announces_every_result_and_the_next_checkpoint_records_them(new_run: NewRun) -> None:
    h = await new_run()
    delivered = h.ctx.sink.subscribe()
    rnd = _Round(h.state, h.ctx)
    calls = [call("c1", "add", "1"), call("c2", "mul", "2")]
    assert await run_batch(h.state, h.ctx, calls, rnd) is False
    assert [r.content for r in rnd.order] == ["add: 1", "mul: 2"]
    # The batch's last group waits for the node's checkpoint: not stored, so not delivered yet.
    assert await h.store.tool_results(h.state.run_id) == {}
    assert kinds([delivered.get_nowait() for _ in range(delivered.qsize())]) == ["tool_start", "tool_start"]
    await h.ctx.journal.checkpoint(h.state, "tools", "agent", [])
    assert list(await h.store.tool_results(h.state.run_id)) == ["c1", "c2"]
    assert kinds([delivered.get_nowait() for _ in range(delivered.qsize())]) == ["tool_end", "tool_end"]
    assert [e.sequence for e in await h.events()] == [1, 2, 3, 4]
    assert await run_batch(h.state, h.ctx, [], rnd) is False


def _counting_result_writes(h: Harness) -> list[list[str]]:
    """The call ids of every record_tool_results write the store is asked for from now on."""
    writes: list[list[str]] = []
    record = h.store.record_tool_results

    async def counted(run_id: str, owner: str, results: list[common_pb2.ToolResult]) -> None:
        writes.append([r.tool_call_id for r in results])
        await record(run_id, owner, results)

    h.store.record_tool_results = counted  # type: ignore[method-assign]
    return writes


async def test_results_streaming_in_apart_cost_no_write_of_their_own(new_run: NewRun) -> None:
    h = await new_run(tools=FakeTools(gap_s=acting.GROUP_LINGER_S / 5))
    writes = _counting_result_writes(h)
    calls = [call("c1", "add", "1"), call("c2", "add", "2"), call("c3", "add", "3")]
    assert await run_batch(h.state, h.ctx, calls, _Round(h.state, h.ctx)) is False
    assert writes == []  # one group, the batch's last: the node's checkpoint records it
    await h.ctx.journal.checkpoint(h.state, "tools", "agent", [])
    assert list(await h.store.tool_results(h.state.run_id)) == ["c1", "c2", "c3"]


async def test_a_group_written_after_results_were_carried_keeps_them_first(new_run: NewRun) -> None:
    h = await new_run()
    writes = _counting_result_writes(h)
    h.ctx.journal.record_with_next_checkpoint([result("c1", "carried")])
    await h.ctx.journal.tool_results(h.state.run_id, [result("c2", "written")])
    assert writes == [["c1", "c2"]]
    await h.ctx.journal.checkpoint(h.state, "tools", "agent", [])
    assert list(await h.store.tool_results(h.state.run_id)) == ["c1", "c2"]
    assert writes == [["c1", "c2"]]  # recorded once


async def test_a_serial_round_writes_each_result_before_the_next_call_starts(new_run: NewRun) -> None:
    h = await new_run(serial_tools=True)
    writes = _counting_result_writes(h)
    calls = [call("c1", "add", "1"), call("c2", "add", "2")]
    assert await run_batch(h.state, h.ctx, calls, _Round(h.state, h.ctx)) is False
    assert writes == [["c1"], ["c2"]]


async def test_cancel_stops_the_batch_and_unanswered_calls_get_cancelled_results(new_run: NewRun) -> None:
    h = await new_run(tools=FakeTools(hang=["slow"]))
    rnd = _Round(h.state, h.ctx)
    calls = [call("c1", "add"), call("c2", "slow")]
    batch = asyncio.create_task(run_batch(h.state, h.ctx, calls, rnd))
    await assert_eventually(lambda: "c1" in rnd.finished)  # the fast call is done, the slow one runs
    h.ctx.cancel.set()
    assert await batch is True
    assert list(rnd.finished) == ["c1"]
    await close_unanswered(calls, rnd)
    assert rnd.finished["c2"].error_kind == common_pb2.TOOL_ERROR_KIND_CANCELLED
    assert set(await h.store.tool_results(h.state.run_id)) == {"c1", "c2"}


async def test_conclude_says_why_the_round_ends_the_run(new_run: NewRun) -> None:
    h = await new_run(max_steps=1)
    h.state.current_step = 1
    calls = [call("c1", "add")]
    rnd = _Round(h.state, h.ctx)
    rnd.finished["c1"] = result("c1", "4")
    h.state.approvals = {"c1": decided("c1", agent_pb2.ApprovalDecision.VERDICT_APPROVE)}
    ends = {
        StopReason.CANCELLED: conclude(h.state, h.ctx, calls, rnd, cancelled=True, structured_output=None),
        StopReason.COMPLETED: conclude(
            h.state, h.ctx, calls, rnd, cancelled=False, structured_output='{"n": 4}'
        ),
        StopReason.MAX_STEPS: conclude(h.state, h.ctx, calls, rnd, cancelled=False, structured_output=None),
    }
    for reason, update in ends.items():
        assert (update.stop, update.stop_reason, update.steps, update.approvals) == (True, reason, 1, {})
        assert [m.tool_call_id for m in update.messages] == ["c1"]
    assert ends[StopReason.COMPLETED].structured_output_json == '{"n": 4}'


async def test_a_resumed_round_runs_only_its_unfinished_calls(new_run: NewRun) -> None:
    h = await new_run()
    h.state.messages.append(asks(call("c1", "add", "1"), call("c2", "add", "2")))
    h.ctx.recorded_results = {"c1": result("c1", "from before the crash")}
    update = await tools(h.state, h.ctx)
    assert [[c.id for c in batch] for batch in h.tools.batches] == [["c2"]]
    assert [m.content for m in update.messages] == ["from before the crash", "add: 2"]
    assert [c.id for c in update.tool_calls] == ["c1", "c2"]
    assert closing.CANCELLED_RESULT not in {m.content for m in update.messages}
