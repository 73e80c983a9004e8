"""A run is executed by one task, ends, and says so: races, deadlines, admission and faults.

Through the real services on both stores: concurrent Resumes (and the
gateway's own orphan scan) of one paused run, Cancel racing Resume, client
deadlines that expire while the gateway sets a run up, a burst past the
admission limit, and a store fault nobody classified.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import grpc
import pytest
import sqlalchemy.event
import sqlalchemy.exc
from google.rpc import code_pb2

from agentloop.scripted_model import Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2, common_pb2
from gateway.journal.closing import tool_message
from gateway.store.base import CheckpointWrite, RunStatus
from gateway.store.sql import SqlStore
from tests.support.scripts import add_scenario
from tests.support.stack import Stack, final_of, kinds, start_stack
from tests.support.tools import Probe, make_registry, probed_stack

pytestmark = pytest.mark.integration

SCRIPT = Script(
    scenarios=(
        add_scenario(1, 2, "Result: {{last_tool}}", match="^add please$"),
        Scenario(
            match="^nap$",
            turns=(
                Turn(tool_calls=(ScriptedToolCall("sleep_for", {"seconds": 0.5}),)),
                Turn(content="rested"),
            ),
        ),
        Scenario(
            match="^two steps$",
            turns=(
                Turn(tool_calls=(ScriptedToolCall("add", {"a": 1, "b": 2}),)),
                Turn(tool_calls=(ScriptedToolCall("add", {"a": 3, "b": 4}),)),
                Turn(content="done"),
            ),
        ),
        Scenario(match="", turns=(Turn(content="Reply to: {{user}}"),)),
    )
)


async def eventually(check: Callable[[], Awaitable[bool]], timeout_s: float = 30.0) -> None:
    """Poll an async condition until it holds (fail after `timeout_s`)."""
    deadline = time.monotonic() + timeout_s
    while not await check():
        assert time.monotonic() < deadline, f"condition not met within {timeout_s}s"
        await asyncio.sleep(0.05)


@pytest.fixture
async def stack_and_probe(database_url: str) -> AsyncIterator[tuple[Stack, Probe]]:
    async with probed_stack(
        SCRIPT, database_url=database_url, gateway_overrides={"orphan_scan_s": 0.05}
    ) as stack_and_probe:
        yield stack_and_probe


async def events_of(call: grpc.aio.UnaryStreamCall) -> list[agent_pb2.RunEvent]:  # type: ignore[type-arg]
    return [response.event async for response in call]


async def paused_run(stack: Stack, thread_id: str) -> agent_pb2.RunEvent:
    events = await stack.run("add please", thread_id=thread_id, user_id="ana", require_approval=["add"])
    return next(e for e in events if e.WhichOneof("event") == "interrupt")


def approve(interrupt: agent_pb2.RunEvent) -> agent_pb2.ResumeRequest:
    call = interrupt.interrupt.pending[0]
    decision = agent_pb2.ApprovalDecision(
        tool_call_id=call.id, verdict=agent_pb2.ApprovalDecision.VERDICT_APPROVE
    )
    return agent_pb2.ResumeRequest(run_id=interrupt.run_id, user_id="ana", decisions=[decision])


async def outcome(call: Awaitable[list[agent_pb2.RunEvent]]) -> list[agent_pb2.RunEvent] | grpc.StatusCode:
    try:
        return await call
    except grpc.aio.AioRpcError as err:
        return err.code()


async def thread_is_sound(stack: Stack, thread_id: str) -> list[common_pb2.Message]:
    """Every tool call of the thread answered exactly once; returns the messages."""
    thread = await stack.agent.GetThread(agent_pb2.GetThreadRequest(thread_id=thread_id, user_id="ana"))
    asked = [c.id for m in thread.messages for c in m.tool_calls]
    answered = Counter(m.tool_call_id for m in thread.messages if m.role == common_pb2.ROLE_TOOL)
    assert sorted(answered) == sorted(asked), thread.messages
    assert set(answered.values()) <= {1}, f"tool calls answered more than once: {answered}"
    return list(thread.messages)


# --- one hand-over of a paused run ----------------------------------------------------


async def test_concurrent_resumes_and_the_orphan_scan_execute_a_paused_run_once(
    stack_and_probe: tuple[Stack, Probe],
) -> None:
    stack, probe = stack_and_probe
    manager = stack.gateway.manager
    for trial in range(3):
        thread_id = f"t-race-{trial}"
        interrupt = await paused_run(stack, thread_id)
        request = approve(interrupt)
        racers = [outcome(events_of(stack.agent.Resume(request, timeout=30))) for _ in range(6)]
        results = await asyncio.gather(*racers, manager.adopt_orphans(), manager.adopt_orphans())
        streams = [r for r in results[:6] if isinstance(r, list)]
        refused = [r for r in results[:6] if not isinstance(r, list)]
        assert set(refused) <= {grpc.StatusCode.FAILED_PRECONDITION}, refused
        finals = [e for stream in streams for e in stream if e.WhichOneof("event") == "final"]
        assert {f.final.final_reply for f in finals} == {"Result: 3"}
        assert len({f.sequence for f in finals}) == 1, "two executions sent their own final"
        assert probe.calls["add"] == trial + 1
        stored = await stack.gateway.store.events(interrupt.run_id, 0)
        assert [e.WhichOneof("event") for e in stored].count("final") == 1
        messages = await thread_is_sound(stack, thread_id)
        tool_replies = [m.content for m in messages if m.role == common_pb2.ROLE_TOOL]
        assert tool_replies == ["3"], tool_replies  # never both rejected and answered
        results_stored = await stack.gateway.store.tool_results(interrupt.run_id)
        assert len(results_stored) == 1


async def test_cancel_racing_resume_leaves_one_outcome(stack_and_probe: tuple[Stack, Probe]) -> None:
    stack, probe = stack_and_probe
    for trial in range(3):
        thread_id = f"t-cancel-race-{trial}"
        interrupt = await paused_run(stack, thread_id)
        cancel = stack.agent.Cancel(agent_pb2.CancelRequest(run_id=interrupt.run_id, user_id="ana"))
        resumed, cancelled = await asyncio.gather(
            outcome(events_of(stack.agent.Resume(approve(interrupt), timeout=30))), cancel
        )
        run = await stack.gateway.store.get_run(interrupt.run_id)
        assert run is not None
        assert run.status in (RunStatus.COMPLETED, RunStatus.CANCELLED)
        assert cancelled.status in (agent_pb2.RUN_STATUS_COMPLETED, agent_pb2.RUN_STATUS_CANCELLED)
        messages = await thread_is_sound(stack, thread_id)
        tool_replies = [m.content for m in messages if m.role == common_pb2.ROLE_TOOL]
        assert len(tool_replies) == 1
        if (
            isinstance(resumed, list)
            and final_of(resumed).metadata.stop_reason == agent_pb2.STOP_REASON_COMPLETED
        ):
            assert tool_replies == ["3"]
        stored = await stack.gateway.store.events(interrupt.run_id, 0)
        ends = [e.WhichOneof("event") for e in stored if e.WhichOneof("event") in ("final", "error")]
        assert len(ends) == 1, ends
    assert probe.calls["add"] <= 3


# --- runs that always end -------------------------------------------------------------


async def unfinished_runs(store: SqlStore) -> list[str]:
    from sqlalchemy import select

    from gateway.store import tables

    async with store.engine.connect() as conn:
        rows = await conn.execute(
            select(tables.runs.c.run_id).where(tables.runs.c.status.in_(["queued", "running"]))
        )
        return list(rows.scalars().all())


async def test_client_deadlines_during_setup_leave_no_run_behind(
    stack_and_probe: tuple[Stack, Probe],
) -> None:
    stack, _ = stack_and_probe
    store = stack.gateway.store
    assert isinstance(store, SqlStore)
    threads = [f"t-deadline-{i}" for i in range(60)]
    for thread_id in threads:
        await stack.run("hello", thread_id=thread_id, user_id="ana")

    async def hurried(i: int) -> list[agent_pb2.RunEvent] | grpc.StatusCode:
        request = agent_pb2.RunRequest(
            input="hello",
            user_id="ana",
            thread_id=threads[i % len(threads)],
            options=agent_pb2.RunOptions(concurrency=agent_pb2.CONCURRENCY_POLICY_ENQUEUE),
        )
        deadline_s = 0.001 + (i % 60) * 0.001 if i % 2 else 0.005 + (i % 50) * 0.005
        return await outcome(events_of(stack.agent.Run(request, timeout=deadline_s)))

    results = await asyncio.gather(*(hurried(i) for i in range(300)))
    failures = {r for r in results if not isinstance(r, list)}
    assert failures <= {grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED}, failures
    assert grpc.StatusCode.DEADLINE_EXCEEDED in failures

    async def all_ended() -> bool:
        return not await unfinished_runs(store)

    await eventually(all_ended, timeout_s=30)
    for thread_id in threads:
        events = await stack.run("after the storm", thread_id=thread_id, user_id="ana", deadline_s=30)
        assert final_of(events).final_reply == "Reply to: after the storm"


async def test_clients_leaving_while_sqlite_writes_wait_leave_the_gateway_writing(tmp_path: Path) -> None:
    """Runs whose clients leave while their setup waits for the SQLite file's write lock.

    Another process holds the lock; forty Runs with 0.3 s deadlines queue
    their first writes behind it and are cancelled there. SQLAlchemy on its
    own would take each cancelled statement for a lost connection and close
    it from the event loop while aiosqlite's thread still ran it. Here no
    connection is thrown away, and once the lock is free every run left
    behind ends and new runs complete.
    """
    path = tmp_path / "agentloop.db"
    stack = await start_stack(SCRIPT, database_url=f"sqlite:///{path}")
    try:
        store = stack.gateway.store
        assert isinstance(store, SqlStore)
        thrown_away: list[BaseException | None] = []
        sqlalchemy.event.listen(
            store.engine.sync_engine, "invalidate", lambda _c, _r, exc: thrown_away.append(exc)
        )
        await stack.run("hello", thread_id="t-locked", user_id="ana")
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            requests = [agent_pb2.RunRequest(input="hello", user_id="ana") for _ in range(40)]
            outcomes = await asyncio.gather(
                *(outcome(events_of(stack.agent.Run(r, timeout=0.3))) for r in requests)
            )
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert set(outcomes) == {grpc.StatusCode.DEADLINE_EXCEEDED}
        assert thrown_away == []

        async def all_ended() -> bool:
            return not await unfinished_runs(store)

        await eventually(all_ended, timeout_s=30)
        events = await stack.run("after the lock", thread_id="t-locked", user_id="ana", deadline_s=30)
        assert final_of(events).final_reply
    finally:
        await stack.close()


async def test_admission_counts_runs_before_starting_them(database_url: str) -> None:
    registry, probe = make_registry()
    limit = 4
    stack = await start_stack(
        SCRIPT, registry, database_url=database_url, gateway_overrides={"max_active_runs": limit}
    )
    manager = stack.gateway.manager
    most = 0
    stop = asyncio.Event()

    async def sample() -> None:
        nonlocal most
        while not stop.is_set():
            most = max(most, manager.active_runs)
            await asyncio.sleep(0)

    sampler = asyncio.create_task(sample())
    try:
        results = await asyncio.gather(
            *(outcome(stack.run("nap", user_id="ana", deadline_s=60)) for _ in range(40))
        )
    finally:
        stop.set()
        await sampler
        await stack.close()
    finished = [r for r in results if isinstance(r, list)]
    refused = [r for r in results if not isinstance(r, list)]
    assert set(refused) == {grpc.StatusCode.RESOURCE_EXHAUSTED}
    assert all(final_of(events).final_reply == "rested" for events in finished)
    assert finished
    assert len(finished) + len(refused) == 40
    assert most <= limit, f"{most} runs executed at once with a limit of {limit}"
    assert probe.max_active <= limit


# --- a fault nobody classified ------------------------------------------------------------

SECRET = "top-secret-parameter"


class FaultyStore(SqlStore):
    """Fails the checkpoint after a given node with an error quoting SQL and its parameters."""

    def __init__(self, url: str, fail_after: str) -> None:
        super().__init__(url)
        self.fail_after = fail_after
        self.armed = False

    async def write_checkpoint(self, write: CheckpointWrite) -> object:  # type: ignore[override]
        if self.armed and write.record.node == self.fail_after and write.status is None:
            raise sqlalchemy.exc.StatementError(
                "invalid byte sequence", "INSERT INTO messages (data) VALUES (:data)", {"data": SECRET}, None
            )
        return await super().write_checkpoint(write)


@pytest.mark.parametrize("node", ["agent", "tools"])
async def test_an_unclassified_store_fault_ends_the_run_failed_once(database_url: str, node: str) -> None:
    from gateway.store import migrate

    await migrate.upgrade_async(database_url)
    store = FaultyStore(database_url, fail_after=node)
    registry, _ = make_registry()
    stack = await start_stack(SCRIPT, registry, database_url=database_url, store=store)
    try:
        store.armed = True
        events = await stack.run("two steps", thread_id="t-fault", user_id="ana")
        assert kinds(events).count("error") == 1
        assert kinds(events)[-1] == "error"
        error = events[-1].error
        assert error.code == code_pb2.INTERNAL
        assert SECRET not in error.message
        assert "INSERT" not in error.message
        run = await store.get_run(events[0].run_id)
        assert run is not None
        assert (run.status, run.owner) == (RunStatus.FAILED, None)
        stored = await store.events(events[0].run_id, 0)
        assert [e.WhichOneof("event") for e in stored].count("error") == 1
        reply = await stack.agent.Cancel(agent_pb2.CancelRequest(run_id=events[0].run_id, user_id="ana"))
        assert reply.status == agent_pb2.RUN_STATUS_FAILED
        messages = await thread_is_sound(stack, "t-fault")
        # A call that finished before the fault keeps its result: the thread says what the store has.
        stored_results = await store.tool_results(events[0].run_id)
        for message in messages:
            if message.role == common_pb2.ROLE_TOOL:
                assert message.content == tool_message(stored_results[message.tool_call_id]).content
        store.armed = False
        events = await stack.run("and now?", thread_id="t-fault", user_id="ana")
        assert final_of(events).final_reply == "Reply to: and now?"
    finally:
        await stack.close()


async def test_an_orphan_that_cannot_be_rebuilt_is_ended_not_retried_forever(
    stack_and_probe: tuple[Stack, Probe],
) -> None:
    stack, _ = stack_and_probe
    store = stack.gateway.store
    await store.create_thread("t-corrupt", "ana")
    await store.create_run("r-corrupt", "t-corrupt", "ana", b"\xff\xff\xff")
    await store.start_run("r-corrupt", "a-dead-gateway", -1)
    assert "r-corrupt" in await stack.gateway.manager.adopt_orphans()
    run = await store.get_run("r-corrupt")
    assert run is not None
    assert (run.status, run.owner) == (RunStatus.FAILED, None)
    watched = [
        r.event
        async for r in stack.agent.Watch(
            agent_pb2.WatchRequest(run_id="r-corrupt", user_id="ana"), timeout=10
        )
    ]
    assert kinds(watched) == ["error"]
    assert watched[0].error.code == code_pb2.INTERNAL
    events = await stack.run("still usable?", thread_id="t-corrupt", user_id="ana")
    assert final_of(events).final_reply == "Reply to: still usable?"
