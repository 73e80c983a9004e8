"""Every route of the loop's graph, driven in process with a fake model and fake tools.

Each test runs `run_graph` from the start on a real SQLite store and checks
where the run went (its final state, stored status and checkpoints), so a
routing bug shows up here in milliseconds rather than only through the four
real services.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from agentloop.kernel.errors import Unavailable
from agentloop.v1 import agent_pb2
from gateway.journal.convert import metadata_of, restore
from gateway.journal.state import (
    RunState,
    StopReason,
)
from gateway.loop import acting
from gateway.loop.graph import run_graph
from gateway.store.base import RunStatus
from tests.unit.fakes import OWNER, FakeReasoner, FakeTools, Harness, asks, call, kinds, new_run, says

__all__ = ["new_run"]

NewRun = Callable[..., Awaitable[Harness]]


async def nodes_entered(h: Harness) -> list[str]:
    return [e.node_start.node for e in await h.events() if e.WhichOneof("event") == "node_start"]


async def status(h: Harness) -> RunStatus:
    row = await h.store.get_run(h.state.run_id)
    assert row is not None
    return row.status


async def test_agent_tools_agent_finalize(new_run: NewRun) -> None:
    h = await new_run(FakeReasoner(asks(call("c1", "add", '{"a": 2, "b": 2}')), says("It is 4.")))
    state = await run_graph(h.state, h.ctx)
    assert await nodes_entered(h) == ["init_state", "memory_trigger", "agent", "tools", "agent", "finalize"]
    assert (state.final_reply, state.stop_reason) == ("It is 4.", StopReason.COMPLETED)
    assert (metadata_of(state).tool_calls, metadata_of(state).steps_taken) == (1, 1)
    assert [c.name for c in h.tools.batches[0]] == ["add"]
    assert await status(h) == RunStatus.COMPLETED
    # The model's second call saw the tool's result.
    assert h.reasoner.params[1].messages[-1].content == 'add: {"a": 2, "b": 2}'


async def test_agent_straight_to_finalize(new_run: NewRun) -> None:
    h = await new_run(FakeReasoner(says("Hello.")))
    state = await run_graph(h.state, h.ctx)
    assert await nodes_entered(h) == ["init_state", "memory_trigger", "agent", "finalize"]
    assert state.final_reply == "Hello."
    assert not h.tools.batches
    final = [e.final for e in await h.events() if e.WhichOneof("event") == "final"]
    assert [f.final_reply for f in final] == ["Hello."]


async def test_max_steps_asks_for_an_answer_without_tools(new_run: NewRun) -> None:
    h = await new_run(FakeReasoner(asks(call("c1", "add")), says("Best guess: 4.")), max_steps=1)
    state = await run_graph(h.state, h.ctx)
    assert state.stop_reason == StopReason.MAX_STEPS
    assert state.final_reply == "Best guess: 4."
    assert len(h.tools.batches) == 1
    assert await status(h) == RunStatus.COMPLETED


async def test_max_steps_with_tools_still_wanted_needs_more_steps(new_run: NewRun) -> None:
    h = await new_run(FakeReasoner(asks(call("c1", "add")), asks(call("c2", "add"))), max_steps=1)
    state = await run_graph(h.state, h.ctx)
    assert state.stop_reason == StopReason.NEEDS_MORE_STEPS
    assert len(h.tools.batches) == 1  # the call past the limit never ran
    assert "need more steps" in state.final_reply


async def test_a_stop_flag_from_the_tools_node_goes_to_finalize(new_run: NewRun) -> None:
    same = call("c", "search", '{"q": "x"}')
    replies = [asks(call(f"c{i}", same.name, same.arguments_json)) for i in range(6)]
    h = await new_run(FakeReasoner(*replies))
    state = await run_graph(h.state, h.ctx)
    assert state.stop_reason == StopReason.LOOP_DETECTED
    entered = await nodes_entered(h)
    assert entered[-2:] == ["tools", "finalize"]
    assert "stopped" in state.final_reply


async def test_approval_pauses_at_tools_and_a_decision_continues_there(new_run: NewRun) -> None:
    h = await new_run(
        FakeReasoner(asks(call("c1", "delete", '{"id": 7}')), says("Deleted.")), require_approval={"delete"}
    )
    state = await run_graph(h.state, h.ctx)
    assert (state.awaiting_approval, state.stop_reason) == (True, StopReason.PAUSED)
    assert not h.tools.batches
    assert await status(h) == RunStatus.PAUSED
    checkpoint = await h.store.latest_checkpoint(h.state.run_id)
    assert checkpoint is not None
    assert checkpoint.record.next_node == "tools"
    assert "interrupt" in kinds(await h.events())

    # Resume: the state rebuilt from the checkpoint plus an approval runs the call and finishes.
    assert await h.store.claim_paused(h.state.run_id, OWNER, 60)
    resumed = RunState(h.state.run_id, h.state.thread_id, h.state.user_id, h.state.config)
    resumed.messages = list(state.messages)
    approve = agent_pb2.ApprovalDecision(
        tool_call_id="c1", verdict=agent_pb2.ApprovalDecision.VERDICT_APPROVE
    )
    restore(resumed, checkpoint.record, {}, {"c1": approve})
    final = await run_graph(resumed, h.ctx, start=checkpoint.record.next_node)
    assert (final.final_reply, final.stop_reason, final.approvals) == ("Deleted.", StopReason.COMPLETED, {})
    assert [c.id for c in h.tools.batches[0]] == ["c1"]


async def test_cancel_before_a_node_goes_to_finalize(new_run: NewRun) -> None:
    h = await new_run(FakeReasoner(says("never asked")))
    h.ctx.cancel.set()
    state = await run_graph(h.state, h.ctx)
    assert state.stop_reason == StopReason.CANCELLED
    assert await nodes_entered(h) == ["init_state", "memory_trigger", "finalize"]
    assert not h.reasoner.params
    assert await status(h) == RunStatus.CANCELLED


async def test_a_failing_dependency_fails_the_run_once(new_run: NewRun) -> None:
    h = await new_run(FakeReasoner(Unavailable("the model endpoint is down")))
    state = await run_graph(h.state, h.ctx)
    assert state.stop_reason == StopReason.ERROR
    assert state.error is not None
    assert (state.error.code, state.error.node) == ("UNAVAILABLE", "agent")
    events = await h.events()
    assert kinds(events).count("error") == 1
    assert await status(h) == RunStatus.FAILED


async def test_a_node_failing_mid_round_closes_its_tool_calls(new_run: NewRun) -> None:
    h = await new_run(
        FakeReasoner(asks(call("c1", "add"), call("c2", "add"))), FakeTools(fail=RuntimeError("boom"))
    )
    state = await run_graph(h.state, h.ctx)
    assert state.stop_reason == StopReason.ERROR
    assert state.error is not None
    assert state.error.node == "tools"
    # The thread stays valid: both calls have results, so the next run can go on from it.
    history = await h.store.thread_messages(h.state.thread_id, user_id="ana")
    answered = [m.tool_call_id for m in history if m.tool_call_id]
    assert answered == ["c1", "c2"]


async def test_a_tools_node_failing_after_its_calls_finished_keeps_their_results(
    new_run: NewRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = await new_run(FakeReasoner(asks(call("c1", "add", "1"), call("c2", "add", "2"))))

    def broken(*_args: object, **_kwargs: object) -> None:
        raise Unavailable("the round could not be concluded")

    monkeypatch.setattr(acting, "conclude", broken)
    state = await run_graph(h.state, h.ctx)
    assert state.stop_reason == StopReason.ERROR
    assert await status(h) == RunStatus.FAILED
    # Both calls ran; their results (carried to the checkpoint that never came) are what the thread
    # and the store say, and the error result is for nobody.
    stored = await h.store.tool_results(h.state.run_id)
    assert {k: r.content for k, r in stored.items()} == {"c1": "add: 1", "c2": "add: 2"}
    messages = await h.store.thread_messages(h.state.thread_id, user_id=h.state.user_id)
    assert [m.content for m in messages if m.tool_call_id] == ["add: 1", "add: 2"]
    assert kinds(await h.events()).count("tool_end") == 2
