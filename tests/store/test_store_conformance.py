"""The Store contract, checked against SQLite and Postgres alike (see conftest.py)."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from agentloop.internal.v1 import checkpoint_pb2
from agentloop.kernel.errors import FailedPrecondition, NotFound
from agentloop.v1 import agent_pb2, common_pb2
from gateway.store.base import CheckpointWrite, LeaseLost, RunRow, RunStatus, ThreadBusy
from gateway.store.scope import thread_key
from gateway.store.sql import SqlStore

USER = "user-1"
A, B = "gateway-a", "gateway-b"


def msg(content: str, role: int = common_pb2.ROLE_USER) -> common_pb2.Message:
    return common_pb2.Message(role=role, content=content)  # type: ignore[arg-type]


def event(run_id: str, sequence: int, node: str = "reason") -> agent_pb2.RunEvent:
    return agent_pb2.RunEvent(run_id=run_id, sequence=sequence, node_start=agent_pb2.NodeStart(node=node))


def record(
    node: str = "reason", message_count: int = 0, last_sequence: int = 0
) -> checkpoint_pb2.CheckpointRecord:
    return checkpoint_pb2.CheckpointRecord(
        node=node, next_node="act", current_step=1, message_count=message_count, last_sequence=last_sequence
    )


async def running(
    store: SqlStore, run_id: str, thread_id: str | None = None, owner: str = A, lease_s: float = 30.0
) -> RunRow:
    thread_id = thread_id or f"thread-of-{run_id}"
    await store.create_thread(thread_id, USER)
    await store.create_run(run_id, thread_id, USER, b"request")
    return await store.start_run(run_id, owner, lease_s)


async def checkpoint(
    store: SqlStore, run_id: str, owner: str = A, n_messages: int = 1, **kw: object
) -> RunRow:
    return await store.write_checkpoint(
        CheckpointWrite(
            run_id=run_id,
            owner=owner,
            record=record(),
            new_messages=[msg(f"{run_id} message {i}") for i in range(n_messages)],
            **kw,  # type: ignore[arg-type]
        )
    )


def is_utc(value: datetime | None) -> bool:
    return value is not None and value.utcoffset() == timedelta(0)


# --- threads and runs --------------------------------------------------------


async def test_create_thread_is_idempotent_and_timestamps_are_aware_utc(store: SqlStore) -> None:
    assert await store.get_thread("t1", user_id=USER) is None
    first = await store.create_thread("t1", USER)
    again = await store.create_thread("t1", USER)
    assert again == first
    assert first.user_id == USER
    assert first.message_count == 0
    assert is_utc(first.created_at)
    assert is_utc(first.updated_at)
    assert abs(first.created_at - datetime.now(UTC)) < timedelta(seconds=30)
    assert await store.get_thread("t1", user_id=USER) == first


async def test_create_run_is_queued_and_latest_run_is_the_newest(store: SqlStore) -> None:
    await store.create_thread("t1", USER)
    assert await store.latest_run("t1", user_id=USER) is None
    r1 = await store.create_run("r1", "t1", USER, b"\x00request\xff")
    assert r1.status is RunStatus.QUEUED
    assert r1.request == b"\x00request\xff"
    assert r1.owner is None
    assert r1.lease_expires_at is None
    assert (r1.checkpoint_count, r1.last_sequence, r1.cancel_requested) == (0, 0, False)
    assert is_utc(r1.created_at)
    await store.create_run("r2", "t1", USER, b"")
    latest = await store.latest_run("t1", user_id=USER)
    assert latest is not None
    assert latest.run_id == "r2"
    assert await store.get_run("r1") == r1
    assert await store.get_run("nope") is None


async def test_create_run_rejects_unknown_thread_and_duplicate_id(store: SqlStore) -> None:
    with pytest.raises(NotFound):
        await store.create_run("r1", "no-such-thread", USER, b"")
    await store.create_thread("t1", USER)
    first = await store.create_run("r1", "t1", USER, b"")
    with pytest.raises(FailedPrecondition):
        await store.create_run("r1", "t1", USER, b"another request")
    # The same insert again (a retry whose first commit was not acknowledged) finds its run.
    assert await store.create_run("r1", "t1", USER, b"") == first


async def test_start_run_takes_ownership_with_a_lease(store: SqlStore) -> None:
    before = datetime.now(UTC)
    run = await running(store, "r1", lease_s=30)
    assert run.status is RunStatus.RUNNING
    assert run.owner == A
    assert run.lease_expires_at is not None
    assert is_utc(run.lease_expires_at)
    assert before + timedelta(seconds=29) < run.lease_expires_at < datetime.now(UTC) + timedelta(seconds=31)
    with pytest.raises(FailedPrecondition):
        await store.start_run("r1", B, 30)
    with pytest.raises(NotFound):
        await store.start_run("unknown", A, 30)


async def test_start_run_raises_thread_busy_while_the_thread_has_a_running_run(store: SqlStore) -> None:
    await running(store, "r1", "t1")
    await store.create_run("r2", "t1", USER, b"")
    with pytest.raises(ThreadBusy):
        await store.start_run("r2", A, 30)
    assert (await store.get_run("r2")).status is RunStatus.QUEUED  # type: ignore[union-attr]
    await store.set_status("r1", RunStatus.COMPLETED)
    assert (await store.start_run("r2", A, 30)).status is RunStatus.RUNNING


async def test_concurrent_start_of_two_runs_on_one_thread_lets_exactly_one_win(
    store: SqlStore, store_b: SqlStore
) -> None:
    await store.create_thread("t1", USER)
    for round_ in range(8):
        a, b = f"a{round_}", f"b{round_}"
        await store.create_run(a, "t1", USER, b"")
        await store.create_run(b, "t1", USER, b"")
        outcomes = await asyncio.gather(
            store.start_run(a, A, 30), store_b.start_run(b, B, 30), return_exceptions=True
        )
        winners = [o for o in outcomes if isinstance(o, RunRow)]
        losers = [o for o in outcomes if isinstance(o, ThreadBusy)]
        assert (len(winners), len(losers)) == (1, 1), outcomes
        await store.set_status(winners[0].run_id, RunStatus.COMPLETED)


# --- checkpoints -------------------------------------------------------------


async def test_a_checkpoint_written_again_by_a_retry_is_stored_once(store: SqlStore) -> None:
    """A retry of a write whose COMMIT went through unacknowledged (a connection lost then)."""
    await running(store, "r1", "t1")
    write = CheckpointWrite(
        run_id="r1",
        owner=A,
        record=record(message_count=1, last_sequence=1),
        new_messages=[msg("hello")],
        events=[event("r1", 1)],
        index=1,
    )
    first = await store.write_checkpoint(write)
    again = await store.write_checkpoint(write)
    assert again.checkpoint_count == first.checkpoint_count == 1
    assert await store.thread_messages("t1", user_id=USER) == [msg("hello")]
    assert [c.index for c in await store.list_checkpoints("t1", "r1", 0, 10, user_id=USER)] == [1]
    # A write whose number was taken by another checkpoint is not this one: the owner lost track.
    with pytest.raises(LeaseLost):
        await store.write_checkpoint(
            CheckpointWrite(run_id="r1", owner=A, record=record(node="other"), index=1)
        )
    assert (
        await store.write_checkpoint(CheckpointWrite(run_id="r1", owner=A, record=record(), index=2))
    ).checkpoint_count == 2


async def test_write_checkpoint_appends_messages_record_and_events_atomically(store: SqlStore) -> None:
    await running(store, "r1", "t1")
    messages = [msg("hello"), msg("hi!", common_pb2.ROLE_ASSISTANT)]
    rec = record(node="reason", message_count=2, last_sequence=3)
    before = await store.get_run("r1")
    assert before is not None
    run = await store.write_checkpoint(
        CheckpointWrite(
            run_id="r1",
            owner=A,
            record=rec,
            new_messages=messages,
            events=[event("r1", 1), event("r1", 2)],
        )
    )
    assert run.checkpoint_count == 1
    assert run.last_sequence == 3  # the record's, higher than the events'
    assert run.lease_expires_at is not None
    assert before.lease_expires_at is not None
    assert run.lease_expires_at >= before.lease_expires_at  # renewed
    assert await store.thread_messages("t1", user_id=USER) == messages
    thread = await store.get_thread("t1", user_id=USER)
    assert thread is not None
    assert thread.message_count == 2
    assert thread.updated_at >= thread.created_at

    cp = await store.latest_checkpoint("r1")
    assert cp is not None
    assert (cp.run_id, cp.thread_id, cp.index, cp.checkpoint_id) == ("r1", "t1", 1, "r1:1")
    assert cp.record == rec
    assert cp.delta_bytes == len(rec.SerializeToString()) + sum(len(m.SerializeToString()) for m in messages)
    assert is_utc(cp.created_at)
    assert await store.get_checkpoint("r1", 1) == cp
    assert await store.get_checkpoint("r1", 2) is None
    assert [e.sequence for e in await store.events("r1", 0)] == [1, 2]

    run = await store.write_checkpoint(
        CheckpointWrite(run_id="r1", owner=A, record=record(message_count=3), events=[event("r1", 7)])
    )
    assert (run.checkpoint_count, run.last_sequence) == (2, 7)  # the events' this time
    # A checkpoint without messages still records where the thread stood.
    assert (await store.thread_messages("t1", user_id=USER)) == messages
    latest = await store.latest_checkpoint("r1")
    assert latest is not None
    assert latest.index == 2
    assert latest.position > cp.position


async def test_message_indexes_continue_across_runs_of_a_thread(store: SqlStore) -> None:
    await running(store, "r1", "t1")
    await checkpoint(store, "r1", n_messages=3, status=RunStatus.COMPLETED)
    await store.create_run("r2", "t1", USER, b"")
    await store.start_run("r2", A, 30)
    await checkpoint(store, "r2", n_messages=2)
    contents = [m.content for m in await store.thread_messages("t1", user_id=USER)]
    assert contents == [f"r1 message {i}" for i in range(3)] + [f"r2 message {i}" for i in range(2)]
    assert [m.content for m in await store.thread_messages("t1", limit=4, user_id=USER)] == contents[:4]
    thread = await store.get_thread("t1", user_id=USER)
    assert thread is not None
    assert thread.message_count == 5
    async with store.engine.connect() as conn:
        idx = (
            await conn.execute(text("SELECT idx FROM messages WHERE run_id IN ('r1', 'r2') ORDER BY idx"))
        ).all()
    assert [i for (i,) in idx] == [0, 1, 2, 3, 4]


async def test_write_checkpoint_with_final_status_ends_the_run_and_frees_the_thread(store: SqlStore) -> None:
    await running(store, "r1", "t1")
    run = await checkpoint(store, "r1", status=RunStatus.COMPLETED)
    assert run.status is RunStatus.COMPLETED
    assert run.owner is None
    assert run.lease_expires_at is None
    with pytest.raises(LeaseLost):
        await checkpoint(store, "r1")
    await store.create_run("r2", "t1", USER, b"")
    assert (await store.start_run("r2", B, 30)).owner == B


async def test_write_checkpoint_by_a_non_owner_raises_lease_lost_and_writes_nothing(store: SqlStore) -> None:
    await running(store, "r1", "t1")
    with pytest.raises(LeaseLost):
        await checkpoint(store, "r1", owner=B, n_messages=2, events=[event("r1", 1)])
    with pytest.raises(LeaseLost):
        await checkpoint(store, "unknown-run")
    run = await store.get_run("r1")
    assert run is not None
    assert run.owner == A
    assert run.checkpoint_count == 0
    assert await store.thread_messages("t1", user_id=USER) == []
    assert await store.latest_checkpoint("r1") is None
    assert await store.events("r1", 0) == []
    thread = await store.get_thread("t1", user_id=USER)
    assert thread is not None
    assert thread.message_count == 0


async def test_write_checkpoint_after_another_gateway_claimed_raises_lease_lost(
    store: SqlStore, store_b: SqlStore
) -> None:
    await running(store, "r1", lease_s=-1)  # already expired: an orphan
    assert await store_b.claim_run("r1", B, 30)
    with pytest.raises(LeaseLost):
        await checkpoint(store, "r1")
    assert (await checkpoint(store_b, "r1", owner=B)).checkpoint_count == 1


async def test_concurrent_writes_on_different_runs_all_land(store: SqlStore) -> None:
    runs = [f"r{i}" for i in range(12)]
    for run_id in runs:
        await running(store, run_id)

    async def steps(run_id: str) -> None:
        for step in range(5):
            await store.write_checkpoint(
                CheckpointWrite(
                    run_id=run_id,
                    owner=A,
                    record=record(message_count=2 * (step + 1), last_sequence=step + 1),
                    new_messages=[msg(f"{run_id}/{step}/a"), msg(f"{run_id}/{step}/b")],
                    events=[event(run_id, step + 1)],
                )
            )

    await asyncio.gather(*(steps(r) for r in runs))
    for run_id in runs:
        run = await store.get_run(run_id)
        assert run is not None
        assert (run.checkpoint_count, run.last_sequence) == (5, 5)
        contents = [m.content for m in await store.thread_messages(f"thread-of-{run_id}", user_id=USER)]
        assert contents == [f"{run_id}/{s}/{x}" for s in range(5) for x in "ab"]
        assert [e.sequence for e in await store.events(run_id, 0)] == [1, 2, 3, 4, 5]


async def test_concurrent_writes_on_one_run_get_distinct_contiguous_positions(store: SqlStore) -> None:
    await running(store, "r1", "t1")
    await asyncio.gather(*(checkpoint(store, "r1", n_messages=2) for _ in range(10)))
    run = await store.get_run("r1")
    assert run is not None
    assert run.checkpoint_count == 10
    cps = await store.list_checkpoints("t1", "r1", 0, 100, user_id=USER)
    assert sorted(cp.index for cp in cps) == list(range(1, 11))
    thread = await store.get_thread("t1", user_id=USER)
    assert thread is not None
    assert thread.message_count == 20
    assert len(await store.thread_messages("t1", user_id=USER)) == 20


@pytest.mark.parametrize("store_url", ["postgres"], indirect=True)
async def test_a_transaction_holding_one_run_does_not_block_writes_to_another(store: SqlStore) -> None:
    """No store-wide lock: row locks on run A leave run B writable (Postgres; SQLite has one writer)."""
    await running(store, "r1")
    await running(store, "r2")
    async with store.engine.connect() as conn, conn.begin():
        await conn.execute(text("SELECT 1 FROM runs WHERE run_id = 'r1' FOR UPDATE"))
        run = await asyncio.wait_for(checkpoint(store, "r2"), timeout=5)
        assert run.checkpoint_count == 1
        blocked = asyncio.ensure_future(checkpoint(store, "r1"))
        await asyncio.sleep(0.2)
        assert not blocked.done()  # waits for the row lock, as it must
    assert (await blocked).checkpoint_count == 1


async def test_bytes_per_step_stay_flat_as_the_run_grows(store: SqlStore) -> None:
    await running(store, "r1", "t1")
    for step in range(40):
        await store.write_checkpoint(
            CheckpointWrite(
                run_id="r1",
                owner=A,
                record=record(message_count=2 * (step + 1), last_sequence=100 + step),
                new_messages=[msg("q" * 200), msg("a" * 300, common_pb2.ROLE_ASSISTANT)],
            )
        )
    stats = await store.storage("r1")
    assert len(stats.by_checkpoint) == 40
    # Each step stores its own messages and a fixed-size record, never the history.
    assert max(stats.by_checkpoint) - min(stats.by_checkpoint) <= 2
    assert stats.by_checkpoint[-1] < 600


async def test_list_checkpoints_pages_in_write_order_and_filters_by_run(store: SqlStore) -> None:
    await running(store, "r1", "t1")
    for _ in range(3):
        await checkpoint(store, "r1")
    await checkpoint(store, "r1", status=RunStatus.COMPLETED)
    await store.create_run("r2", "t1", USER, b"")
    await store.start_run("r2", A, 30)
    for _ in range(3):
        await checkpoint(store, "r2")
    await running(store, "other", "t2")
    await checkpoint(store, "other")

    everything = await store.list_checkpoints("t1", None, 0, 100, user_id=USER)
    assert [cp.checkpoint_id for cp in everything] == [f"r1:{i}" for i in range(1, 5)] + [
        f"r2:{i}" for i in range(1, 4)
    ]
    positions = [cp.position for cp in everything]
    assert positions == sorted(positions)
    page1 = await store.list_checkpoints("t1", None, 0, 3, user_id=USER)
    page2 = await store.list_checkpoints("t1", None, page1[-1].position, 3, user_id=USER)
    page3 = await store.list_checkpoints("t1", None, page2[-1].position, 3, user_id=USER)
    assert page1 + page2 + page3 == everything
    assert [cp.checkpoint_id for cp in await store.list_checkpoints("t1", "r2", 0, 100, user_id=USER)] == [
        "r2:1",
        "r2:2",
        "r2:3",
    ]
    assert await store.list_checkpoints("t1", None, positions[-1], 10, user_id=USER) == []
    assert await store.latest_checkpoint("never") is None


async def test_thread_messages_limit_rebuilds_the_state_as_of_a_checkpoint(store: SqlStore) -> None:
    await running(store, "r1", "t1")
    await store.write_checkpoint(
        CheckpointWrite(run_id="r1", owner=A, record=record(message_count=1), new_messages=[msg("q")])
    )
    await store.write_checkpoint(
        CheckpointWrite(
            run_id="r1",
            owner=A,
            record=record(message_count=3),
            new_messages=[msg("call", common_pb2.ROLE_ASSISTANT), msg("result", common_pb2.ROLE_TOOL)],
        )
    )
    first = await store.get_checkpoint("r1", 1)
    assert first is not None
    as_of_first = await store.thread_messages("t1", limit=first.record.message_count, user_id=USER)
    assert [m.content for m in as_of_first] == ["q"]
    assert [m.content for m in await store.thread_messages("t1", limit=0, user_id=USER)] == []
    assert len(await store.thread_messages("t1", user_id=USER)) == 3


async def _row_counts(store: SqlStore, run_id: str, thread_id: str) -> dict[str, int]:
    async with store.engine.connect() as conn:
        counts = {}
        for table, column, value in (
            ("messages", "thread_id", thread_id),
            ("checkpoints", "run_id", run_id),
            ("run_events", "run_id", run_id),
            ("tool_results", "run_id", run_id),
        ):
            counts[table] = (
                await conn.execute(text(f"SELECT count(*) FROM {table} WHERE {column} = :v"), {"v": value})
            ).scalar_one()
        return counts


async def test_write_checkpoint_returns_the_run_exactly_as_stored(store: SqlStore) -> None:
    await running(store, "r1", "t1")
    await store.request_cancel("r1")
    run = await checkpoint(store, "r1", events=[event("r1", 4)])
    assert run == await store.get_run("r1")
    assert (run.status, run.owner, run.cancel_requested) == (RunStatus.RUNNING, A, True)
    assert run.request == b"request"
    assert is_utc(run.created_at)
    assert is_utc(run.updated_at)
    assert is_utc(run.lease_expires_at)
    ended = await checkpoint(store, "r1", status=RunStatus.FAILED)
    assert ended == await store.get_run("r1")


async def test_a_lease_lost_checkpoint_writes_nothing_at_all(store: SqlStore, store_b: SqlStore) -> None:
    await running(store, "r1", "t1")
    await checkpoint(store, "r1", n_messages=2, events=[event("r1", 1)])
    await store.release(A)
    assert await store_b.claim_run("r1", B, 30)
    before_run, before_thread = await store.get_run("r1"), await store.get_thread("t1", user_id=USER)
    before_counts = await _row_counts(store, "r1", "t1")
    for attempt in (
        dict(n_messages=3, events=[event("r1", 2), event("r1", 3)]),
        dict(n_messages=0, events=[event("r1", 9)], status=RunStatus.COMPLETED),
    ):
        with pytest.raises(LeaseLost):
            await checkpoint(store, "r1", **attempt)  # type: ignore[arg-type]
    assert await store.get_run("r1") == before_run  # counters, lease, updated_at, status, owner
    assert await store.get_thread("t1", user_id=USER) == before_thread  # message_count and updated_at
    assert await _row_counts(store, "r1", "t1") == before_counts
    # An ended run is nobody's: its former owner cannot write either.
    await checkpoint(store_b, "r1", owner=B, status=RunStatus.COMPLETED)
    ended_counts = await _row_counts(store, "r1", "t1")
    with pytest.raises(LeaseLost):
        await checkpoint(store_b, "r1", owner=B, events=[event("r1", 20)])
    assert await _row_counts(store, "r1", "t1") == ended_counts


async def test_message_indexes_stay_contiguous_across_many_writes(store: SqlStore) -> None:
    await running(store, "r1", "t1")
    await running(store, "r2", "t2")
    expected: dict[str, list[str]] = {"t1": [], "t2": []}
    for step in range(30):
        for run_id, thread_id in (("r1", "t1"), ("r2", "t2")):
            n = (step + len(run_id) * (thread_id == "t2")) % 4  # 0..3 messages, some steps none
            contents = [f"{run_id}/{step}/{i}" for i in range(n)]
            expected[thread_id] += contents
            await store.write_checkpoint(
                CheckpointWrite(
                    run_id=run_id, owner=A, record=record(), new_messages=[msg(c) for c in contents]
                )
            )
    async with store.engine.connect() as conn:
        for thread_id, contents in expected.items():
            idx = (
                await conn.execute(
                    text("SELECT idx FROM messages WHERE thread_id = :t ORDER BY idx"),
                    {"t": thread_key(USER, thread_id)},
                )
            ).scalars()
            assert list(idx) == list(range(len(contents)))
            assert [m.content for m in await store.thread_messages(thread_id, user_id=USER)] == contents
            thread = await store.get_thread(thread_id, user_id=USER)
            assert thread is not None
            assert thread.message_count == len(contents)
    cps = await store.list_checkpoints("t1", "r1", 0, 100, user_id=USER)
    assert [cp.index for cp in cps] == list(range(1, 31))


async def test_last_sequence_is_the_maximum_ever_written(store: SqlStore) -> None:
    await running(store, "r1")

    async def write(record_sequence: int, *sequences: int) -> int:
        run = await store.write_checkpoint(
            CheckpointWrite(
                run_id="r1",
                owner=A,
                record=record(last_sequence=record_sequence),
                events=[event("r1", s) for s in sequences],
            )
        )
        return run.last_sequence

    assert await write(0, 3, 1, 2) == 3  # events out of order: their maximum
    assert await write(10) == 10  # the record's, with no events
    assert await write(4, 5, 6) == 10  # never goes back
    assert await write(0, 12, 11) == 12
    stored = await store.get_run("r1")
    assert stored is not None
    assert stored.last_sequence == 12
    assert [e.sequence for e in await store.events("r1", 0)] == [1, 2, 3, 5, 6, 11, 12]


async def test_re_sent_events_keep_their_first_copy(store: SqlStore) -> None:
    await running(store, "r1")
    await checkpoint(store, "r1", events=[event("r1", 1, node="first"), event("r1", 2, node="first")])
    # A resumed run replays its tail; a sequence may even repeat within one write.
    await checkpoint(
        store,
        "r1",
        events=[event("r1", 2, node="again"), event("r1", 3, node="first"), event("r1", 3, node="again")],
    )
    stored = await store.events("r1", 0)
    assert [(e.sequence, e.node_start.node) for e in stored] == [(1, "first"), (2, "first"), (3, "first")]


@pytest.mark.parametrize("status", [RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED])
async def test_an_ending_checkpoint_clears_owner_and_lease(store: SqlStore, status: RunStatus) -> None:
    await running(store, "r1", "t1")
    run = await checkpoint(store, "r1", status=status, events=[event("r1", 1)])
    assert (run.status, run.owner, run.lease_expires_at, run.checkpoint_count) == (status, None, None, 1)
    assert run == await store.get_run("r1")
    assert await store.heartbeat(A, 30, ["r1"]) == 0
    with pytest.raises(LeaseLost):
        await store.record_tool_results("r1", A, [common_pb2.ToolResult(tool_call_id="late")])


async def test_a_non_ending_status_keeps_the_owner_and_renews_the_lease(store: SqlStore) -> None:
    await running(store, "r1", lease_s=1)
    run = await checkpoint(store, "r1", status=RunStatus.RUNNING)
    assert (run.status, run.owner) == (RunStatus.RUNNING, A)
    assert run.lease_expires_at is not None
    assert run.lease_expires_at > datetime.now(UTC) + timedelta(seconds=20)  # the store's lease_s, 30


async def test_the_lease_a_write_renews_is_the_one_claims_compare(store_url: str, store: SqlStore) -> None:
    """Hot-path writes store timestamps exactly as the other statements read and compare them."""
    short = SqlStore(store_url, lease_s=-1)  # every write leaves the lease already expired
    try:
        await running(store, "r1", lease_s=300)
        await running(store, "r2", lease_s=300)
        assert await store.claim_orphans(B, 30, 10) == []
        await checkpoint(short, "r1")
        await short.record_tool_results("r2", A, [common_pb2.ToolResult(tool_call_id="c1")])
        assert sorted(await store.claim_orphans(B, 30, 10)) == ["r1", "r2"]
        await checkpoint(store, "r1", owner=B)  # and renewing it takes it off the market
        await store.release(A)
        assert await store.claim_orphans(A, 30, 10) == []
    finally:
        await short.close()


async def test_a_cancelled_write_leaves_the_store_consistent(store: SqlStore) -> None:
    """Cancelled at any point, a write lands whole or not at all, and the store stays usable."""
    await running(store, "r1", "t1")
    for i in range(40):
        task = asyncio.ensure_future(checkpoint(store, "r1", n_messages=2, events=[event("r1", i + 1)]))
        for _ in range(i % 8):
            await asyncio.sleep(0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    run = await checkpoint(store, "r1", n_messages=2)
    thread = await store.get_thread("t1", user_id=USER)
    assert thread is not None
    cps = await store.list_checkpoints("t1", "r1", 0, 100, user_id=USER)
    assert [cp.index for cp in cps] == list(range(1, run.checkpoint_count + 1))
    assert (
        thread.message_count
        == len(await store.thread_messages("t1", user_id=USER))
        == 2 * run.checkpoint_count
    )
    assert len(await store.events("r1", 0)) == run.checkpoint_count - 1


# --- tool results and events -------------------------------------------------


async def test_record_tool_result_first_write_wins_and_keeps_recording_order(store: SqlStore) -> None:
    await running(store, "r1")
    calls = ["call-c", "call-a", "call-b"]
    for call_id in calls:
        await store.record_tool_result(
            "r1", A, common_pb2.ToolResult(tool_call_id=call_id, name="calc", content=f"first {call_id}")
        )
    await store.record_tool_result(
        "r1", A, common_pb2.ToolResult(tool_call_id="call-a", name="calc", content="second", is_error=True)
    )
    results = await store.tool_results("r1")
    assert list(results) == calls
    assert results["call-a"].content == "first call-a"
    assert not results["call-a"].is_error
    assert await store.tool_results("other") == {}


async def test_record_tool_result_by_a_non_owner_raises_lease_lost(store: SqlStore) -> None:
    await running(store, "r1")
    with pytest.raises(LeaseLost):
        await store.record_tool_result("r1", B, common_pb2.ToolResult(tool_call_id="x"))
    await checkpoint(store, "r1", status=RunStatus.FAILED)
    with pytest.raises(LeaseLost):
        await store.record_tool_result("r1", A, common_pb2.ToolResult(tool_call_id="y"))
    assert await store.tool_results("r1") == {}


async def test_concurrent_duplicate_tool_results_store_one(store: SqlStore, store_b: SqlStore) -> None:
    await running(store, "r1")
    await asyncio.gather(
        *(
            (store if i % 2 else store_b).record_tool_result(
                "r1", A, common_pb2.ToolResult(tool_call_id="same", content=str(i))
            )
            for i in range(10)
        )
    )
    assert list(await store.tool_results("r1")) == ["same"]


async def test_record_tool_results_stores_a_batch_in_order(store: SqlStore) -> None:
    before = await running(store, "r1", lease_s=1)
    batch = [common_pb2.ToolResult(tool_call_id=f"call-{c}", name="calc", content=c) for c in "cab"]
    await store.record_tool_results("r1", A, batch)
    await store.record_tool_results("r1", A, [common_pb2.ToolResult(tool_call_id="call-d", content="d")])
    results = await store.tool_results("r1")
    assert list(results) == ["call-c", "call-a", "call-b", "call-d"]
    assert [r.content for r in results.values()] == ["c", "a", "b", "d"]
    assert results["call-a"] == batch[1]
    run = await store.get_run("r1")
    assert run is not None
    assert run.lease_expires_at is not None
    assert before.lease_expires_at is not None
    assert run.lease_expires_at > before.lease_expires_at + timedelta(seconds=20)  # renewed to lease_s


async def test_record_tool_results_first_write_wins_per_call_id(store: SqlStore) -> None:
    await running(store, "r1")
    await store.record_tool_result("r1", A, common_pb2.ToolResult(tool_call_id="x", content="first x"))
    await store.record_tool_results(
        "r1",
        A,
        [
            common_pb2.ToolResult(tool_call_id="y", content="first y"),
            common_pb2.ToolResult(tool_call_id="x", content="second x", is_error=True),
            common_pb2.ToolResult(tool_call_id="y", content="second y"),  # repeated within the batch
            common_pb2.ToolResult(tool_call_id="z", content="first z"),
        ],
    )
    await store.record_tool_results("r1", A, [common_pb2.ToolResult(tool_call_id="z", content="third z")])
    results = await store.tool_results("r1")
    assert {k: (v.content, v.is_error) for k, v in results.items()} == {
        "x": ("first x", False),
        "y": ("first y", False),
        "z": ("first z", False),
    }
    assert list(results) == ["x", "y", "z"]


async def test_a_checkpoint_records_the_tool_results_it_carries_after_earlier_ones_first_write_wins(
    store: SqlStore,
) -> None:
    await running(store, "r1")
    await store.record_tool_results("r1", A, [common_pb2.ToolResult(tool_call_id="a", content="first a")])
    carried = [
        common_pb2.ToolResult(tool_call_id="c", name="calc", content="c"),
        common_pb2.ToolResult(tool_call_id="a", content="second a"),
        common_pb2.ToolResult(tool_call_id="b\x00nul", content="b"),  # stored by its storable form
    ]
    run = await checkpoint(store, "r1", n_messages=3, tool_results=carried)
    results = await store.tool_results("r1")
    assert list(results) == ["a", "c", "b\x00nul"]
    assert results["a"].content == "first a"
    assert results["c"] == carried[0]
    assert run.checkpoint_count == 1
    assert len(await store.thread_messages("thread-of-r1", user_id=USER)) == 3


async def test_a_checkpoint_by_a_non_owner_records_none_of_its_tool_results(
    store: SqlStore, store_b: SqlStore
) -> None:
    await running(store, "r1", lease_s=-1)
    assert await store_b.claim_run("r1", B, 30)
    with pytest.raises(LeaseLost):
        await checkpoint(store, "r1", tool_results=[common_pb2.ToolResult(tool_call_id="x")])
    assert await store.tool_results("r1") == {}
    await checkpoint(store_b, "r1", owner=B, tool_results=[common_pb2.ToolResult(tool_call_id="y")])
    assert list(await store.tool_results("r1")) == ["y"]


async def test_record_tool_results_by_a_non_owner_raises_lease_lost_and_writes_nothing(
    store: SqlStore, store_b: SqlStore
) -> None:
    await running(store, "r1", lease_s=-1)
    assert await store_b.claim_run("r1", B, 30)
    before = await store.get_run("r1")
    batch = [common_pb2.ToolResult(tool_call_id="a"), common_pb2.ToolResult(tool_call_id="b")]
    with pytest.raises(LeaseLost):
        await store.record_tool_results("r1", A, batch)
    with pytest.raises(LeaseLost):
        await store.record_tool_results("unknown-run", A, batch)
    assert await store.tool_results("r1") == {}
    assert await store.get_run("r1") == before  # the lease was not touched either
    await store_b.record_tool_results("r1", B, batch)
    await checkpoint(store_b, "r1", owner=B, status=RunStatus.COMPLETED)
    with pytest.raises(LeaseLost):
        await store_b.record_tool_results("r1", B, [common_pb2.ToolResult(tool_call_id="c")])
    assert list(await store.tool_results("r1")) == ["a", "b"]


async def test_record_tool_results_of_nothing_is_a_no_op(store: SqlStore) -> None:
    before = await running(store, "r1")
    await store.record_tool_results("r1", A, [])
    await store.record_tool_results("r1", B, [])  # not even the owner check: nothing to protect
    assert await store.get_run("r1") == before
    assert await store.tool_results("r1") == {}


async def test_concurrent_batches_from_two_gateways_store_each_call_once(
    store: SqlStore, store_b: SqlStore
) -> None:
    await running(store, "r1")

    def batch(i: int) -> list[common_pb2.ToolResult]:
        return [common_pb2.ToolResult(tool_call_id=f"c{(i + j) % 5}", content=str(i)) for j in range(3)]

    await asyncio.gather(
        *((store if i % 2 else store_b).record_tool_results("r1", A, batch(i)) for i in range(10))
    )
    assert sorted(await store.tool_results("r1")) == [f"c{k}" for k in range(5)]


async def test_events_page_after_a_sequence_and_append_outside_checkpoints(store: SqlStore) -> None:
    await running(store, "r1")
    await store.append_events("r1", [event("r1", i) for i in range(1, 6)])
    await store.append_events("r1", [event("r1", 3, node="duplicate"), event("r1", 6)])
    await store.append_events("r1", [])
    stored = await store.events("r1", 0)
    assert [e.sequence for e in stored] == [1, 2, 3, 4, 5, 6]
    assert stored[2].node_start.node == "reason"  # the first copy of sequence 3 stayed
    assert [e.sequence for e in await store.events("r1", 2, limit=3)] == [3, 4, 5]
    assert await store.events("r1", 6) == []
    run = await store.get_run("r1")
    assert run is not None
    assert run.last_sequence == 6
    with pytest.raises(NotFound):
        await store.append_events("unknown", [event("unknown", 1)])


# --- cancellation and status -------------------------------------------------


async def test_request_cancel_of_a_queued_run_cancels_it_at_once(store: SqlStore) -> None:
    await store.create_thread("t1", USER)
    await store.create_run("r1", "t1", USER, b"")
    run = await store.request_cancel("r1")
    assert run.status is RunStatus.CANCELLED
    assert run.cancel_requested
    with pytest.raises(FailedPrecondition):
        await store.start_run("r1", A, 30)
    with pytest.raises(NotFound):
        await store.request_cancel("unknown")


async def test_request_cancel_of_a_live_run_only_flags_it_for_its_owner(store: SqlStore) -> None:
    await running(store, "r1")
    run = await store.request_cancel("r1")
    assert run.status is RunStatus.RUNNING
    assert run.cancel_requested
    assert run.owner == A
    # The owner learns it from its next checkpoint.
    after = await checkpoint(store, "r1")
    assert after.cancel_requested
    ended = await checkpoint(store, "r1", status=RunStatus.CANCELLED)
    assert ended.status is RunStatus.CANCELLED
    assert ended.owner is None


async def test_request_cancel_of_an_orphan_cancels_it_at_once(store: SqlStore) -> None:
    await running(store, "r1", "t1", lease_s=-1)
    run = await store.request_cancel("r1")
    assert run.status is RunStatus.CANCELLED
    assert run.owner is None
    assert run.lease_expires_at is None
    assert await store.claim_orphans(B, 30, 10) == []
    await store.create_run("r2", "t1", USER, b"")
    await store.start_run("r2", A, 30)  # the thread is free again


async def test_set_status_forces_a_status_and_clears_the_owner_when_ended(store: SqlStore) -> None:
    await running(store, "r1")
    run = await store.set_status("r1", RunStatus.FAILED)
    assert run.status is RunStatus.FAILED
    assert run.owner is None
    assert run.lease_expires_at is None
    with pytest.raises(NotFound):
        await store.set_status("unknown", RunStatus.FAILED)


# --- ownership ---------------------------------------------------------------


async def test_heartbeat_renews_only_the_owners_running_runs(store: SqlStore) -> None:
    for run_id in ("r1", "r2"):
        await running(store, run_id, lease_s=1)
    await running(store, "r3", owner=B, lease_s=1)
    await running(store, "r4", lease_s=1)
    await store.set_status("r4", RunStatus.COMPLETED)
    assert await store.heartbeat(A, 120, ["r1", "r2", "r3", "r4"]) == 2
    for run_id in ("r1", "r2"):
        run = await store.get_run(run_id)
        assert run is not None
        assert run.lease_expires_at is not None
        assert run.lease_expires_at > datetime.now(UTC) + timedelta(seconds=100)
    r3 = await store.get_run("r3")
    assert r3 is not None
    assert r3.lease_expires_at is not None
    assert r3.lease_expires_at < datetime.now(UTC) + timedelta(seconds=2)
    assert await store.heartbeat("nobody", 30, ["r1", "r2", "r3"]) == 0


async def test_heartbeat_renews_only_the_runs_named(store: SqlStore) -> None:
    """A run the owner no longer executes is left to expire, so an orphan scan can take it."""
    await running(store, "live", lease_s=1)
    await running(store, "abandoned", lease_s=1)
    assert await store.heartbeat(A, 120, ["live"]) == 1
    assert await store.heartbeat(A, 120, []) == 0
    abandoned = await store.get_run("abandoned")
    assert abandoned is not None
    assert abandoned.lease_expires_at is not None
    assert abandoned.lease_expires_at < datetime.now(UTC) + timedelta(seconds=2)


async def paused(store: SqlStore, run_id: str) -> None:
    await running(store, run_id)
    await checkpoint(store, run_id, status=RunStatus.PAUSED, events=[event(run_id, 1)])


async def test_claim_paused_hands_a_paused_run_to_exactly_one_caller(
    store: SqlStore, store_b: SqlStore
) -> None:
    await paused(store, "r1")
    wins = await asyncio.gather(
        *(s.claim_paused("r1", owner, 30) for s, owner in [(store, A), (store_b, B)] * 4)
    )
    assert wins.count(True) == 1
    run = await store.get_run("r1")
    assert run is not None
    assert run.status is RunStatus.RUNNING
    assert run.owner == (A if wins.index(True) % 2 == 0 else B)
    assert run.lease_expires_at is not None
    assert run.lease_expires_at > datetime.now(UTC)
    # Running now: it is nobody's orphan and cannot be claimed as paused again.
    assert await store.claim_orphans(A, 30, 10) == []
    assert not await store.claim_paused("r1", A, 30)
    assert not await store.claim_paused("unknown", A, 30)


async def test_claim_paused_refuses_a_thread_that_runs_another_run(store: SqlStore) -> None:
    await paused(store, "r1")
    await store.create_run("r2", "thread-of-r1", USER, b"request")
    await store.start_run("r2", A, 30)
    with pytest.raises(ThreadBusy):
        await store.claim_paused("r1", A, 30)
    run = await store.get_run("r1")
    assert run is not None
    assert run.status is RunStatus.PAUSED


async def test_reserved_sequences_only_grow_and_need_the_owner(store: SqlStore) -> None:
    run = await running(store, "r1")
    assert (run.sequence_reserved, run.next_sequence_base) == (0, 0)
    await store.reserve_sequences("r1", A, 1024)
    await store.reserve_sequences("r1", A, 10)
    run = await checkpoint(store, "r1", sequence_reserved=512, events=[event("r1", 1)])
    assert (run.last_sequence, run.sequence_reserved, run.next_sequence_base) == (1, 1024, 1024)
    run = await checkpoint(store, "r1", sequence_reserved=2048, events=[event("r1", 2)])
    assert run.sequence_reserved == 2048
    with pytest.raises(LeaseLost):
        await store.reserve_sequences("r1", B, 4096)
    await store.create_run("r2", "thread-of-r1", USER, b"request")
    with pytest.raises(ThreadBusy):
        await store.start_run("r2", A, 30, reserve=64)
    fetched = await store.get_run("r1")
    assert fetched is not None
    assert fetched.sequence_reserved == 2048


async def test_start_run_can_reserve_the_first_event_numbers(store: SqlStore) -> None:
    await store.create_thread("t1", USER)
    await store.create_run("r1", "t1", USER, b"request")
    run = await store.start_run("r1", A, 30, reserve=1024)
    assert (run.sequence_reserved, run.next_sequence_base) == (1024, 1024)


async def test_a_run_created_started_reserves_its_first_event_numbers_and_a_queued_one_none(
    store: SqlStore,
) -> None:
    await store.create_thread("t1", USER)
    started = await store.create_run("r1", "t1", USER, b"request", owner=A, reserve=1024)
    assert (started.sequence_reserved, started.next_sequence_base) == (1024, 1024)
    await store.create_thread("t2", USER)
    queued = await store.create_run("r2", "t2", USER, b"request", reserve=1024)
    assert queued.sequence_reserved == 0


async def test_a_run_that_pauses_or_ends_keeps_no_reservation_beyond_its_last_event(store: SqlStore) -> None:
    await running(store, "r1")
    await store.reserve_sequences("r1", A, 1024)
    run = await checkpoint(
        store, "r1", status=RunStatus.PAUSED, sequence_reserved=4096, events=[event("r1", 7)]
    )
    assert (run.last_sequence, run.sequence_reserved, run.next_sequence_base) == (7, 7, 7)
    with pytest.raises(LeaseLost):
        await store.reserve_sequences("r1", A, 9999)


async def test_claim_run_needs_an_expired_lease_or_the_same_owner(store: SqlStore, store_b: SqlStore) -> None:
    await running(store, "r1", lease_s=30)
    assert not await store_b.claim_run("r1", B, 30)
    assert await store.claim_run("r1", A, 30)  # re-claiming one's own run succeeds
    assert await store.release(A) == 1
    assert await store_b.claim_run("r1", B, 30)
    run = await store.get_run("r1")
    assert run is not None
    assert run.owner == B
    assert not await store.claim_run("r1", A, 30)
    await store.set_status("r1", RunStatus.COMPLETED)
    assert not await store_b.claim_run("r1", B, 30)  # ended runs are nobody's
    assert not await store.claim_run("unknown", A, 30)


async def test_claim_orphans_takes_only_expired_running_runs(store: SqlStore, store_b: SqlStore) -> None:
    await running(store, "live", lease_s=30)
    await running(store, "orphan1", lease_s=-5)
    await running(store, "orphan2", lease_s=-1)
    await store.create_thread("tq", USER)
    await store.create_run("queued", "tq", USER, b"")
    claimed = await store_b.claim_orphans(B, 30, 10)
    assert sorted(claimed) == ["orphan1", "orphan2"]
    for run_id in claimed:
        run = await store.get_run(run_id)
        assert run is not None
        assert run.owner == B
        assert run.lease_expires_at is not None
        assert run.lease_expires_at > datetime.now(UTC)
    assert await store.claim_orphans(A, 30, 10) == []
    assert await store.claim_orphans(A, 30, 0) == []


async def test_claim_orphans_respects_the_limit(store: SqlStore) -> None:
    for i in range(5):
        await running(store, f"o{i}", lease_s=-1)
    first = await store.claim_orphans(B, 30, 2)
    second = await store.claim_orphans(B, 30, 10)
    assert len(first) == 2
    assert len(second) == 3
    assert set(first) | set(second) == {f"o{i}" for i in range(5)}


async def test_two_gateways_claim_each_orphan_exactly_once(store: SqlStore, store_b: SqlStore) -> None:
    orphans = {f"orphan-{i:02d}" for i in range(20)}
    for run_id in sorted(orphans):
        await running(store, run_id, owner="dead-gateway", lease_s=-1)

    async def claim_all(gateway: SqlStore, owner: str) -> list[str]:
        got: list[str] = []
        while batch := await gateway.claim_orphans(owner, 30, 3):
            got.extend(batch)
        return got

    for _ in range(6):
        results = await asyncio.gather(
            claim_all(store, A), claim_all(store_b, B), claim_all(store, A), claim_all(store_b, B)
        )
        claimed = [run_id for got in results for run_id in got]
        assert sorted(claimed) == sorted(orphans)  # all of them, none twice
        for owner, got in zip([A, B, A, B], results, strict=True):
            for run_id in got:
                run = await store.get_run(run_id)
                assert run is not None
                assert run.owner == owner
        # Both "crash": their leases lapse and the orphans are up for grabs again.
        await store.release(A)
        await store.release(B)


async def test_release_hands_runs_over_immediately(store: SqlStore, store_b: SqlStore) -> None:
    await running(store, "r1", lease_s=300)
    await running(store, "r2", lease_s=300)
    assert await store_b.claim_orphans(B, 30, 10) == []
    assert await store.release(A) == 2
    assert sorted(await store_b.claim_orphans(B, 30, 10)) == ["r1", "r2"]
    with pytest.raises(LeaseLost):
        await checkpoint(store, "r1")


# --- retention and accounting ------------------------------------------------


async def test_prune_keeps_the_newest_checkpoints_of_each_run(store: SqlStore) -> None:
    await running(store, "r1", "t1")
    for _ in range(6):
        await checkpoint(store, "r1")
    await running(store, "r2", "t2")
    for _ in range(2):
        await checkpoint(store, "r2")
    stats = await store.prune(keep_last=3, idle_ttl_s=None)
    assert stats.checkpoints_deleted == 3
    assert stats.threads_deleted == 0
    assert [cp.index for cp in await store.list_checkpoints("t1", None, 0, 100, user_id=USER)] == [4, 5, 6]
    assert [cp.index for cp in await store.list_checkpoints("t2", None, 0, 100, user_id=USER)] == [1, 2]
    # keep_last 0 still keeps the newest one: a run must stay resumable.
    stats = await store.prune(keep_last=0, idle_ttl_s=None)
    assert stats.checkpoints_deleted == 3
    latest = await store.latest_checkpoint("r1")
    assert latest is not None
    assert latest.index == 6
    # Messages are the thread's state, never pruned with checkpoints.
    assert len(await store.thread_messages("t1", user_id=USER)) == 6
    # New checkpoints continue the numbering.
    assert (await checkpoint(store, "r1")).checkpoint_count == 7


async def test_prune_drops_idle_threads_with_everything_under_them(store: SqlStore) -> None:
    await running(store, "done", "idle")
    await checkpoint(store, "done", n_messages=2, events=[event("done", 1)])
    await store.record_tool_result("done", A, common_pb2.ToolResult(tool_call_id="c1"))
    await checkpoint(store, "done", status=RunStatus.COMPLETED)
    await running(store, "busy", "active")
    await store.create_thread("queued-thread", USER)
    await store.create_run("waiting", "queued-thread", USER, b"")

    assert (await store.prune(keep_last=10, idle_ttl_s=3600)).threads_deleted == 0
    stats = await store.prune(keep_last=10, idle_ttl_s=0)
    assert stats.threads_deleted == 1
    assert await store.get_thread("idle", user_id=USER) is None
    assert await store.get_run("done") is None
    assert await store.get_thread("active", user_id=USER) is not None
    assert await store.get_thread("queued-thread", user_id=USER) is not None
    async with store.engine.connect() as conn:
        for table in ("messages", "checkpoints", "tool_results", "run_events"):
            column = "thread_id" if table == "messages" else "run_id"
            value = "idle" if table == "messages" else "done"
            count = (
                await conn.execute(text(f"SELECT count(*) FROM {table} WHERE {column} = :v"), {"v": value})
            ).scalar_one()
            assert count == 0, f"{table} kept rows of a deleted thread"


async def test_storage_reports_payload_bytes_per_table(store: SqlStore) -> None:
    await running(store, "r1", "t1")
    messages = [msg("x" * 50), msg("y" * 70)]
    events = [event("r1", 1), event("r1", 2, node="act")]
    rec = record(message_count=2, last_sequence=2)
    await store.write_checkpoint(
        CheckpointWrite(run_id="r1", owner=A, record=rec, new_messages=messages, events=events)
    )
    result = common_pb2.ToolResult(tool_call_id="c1", name="calc", content="42")
    await store.record_tool_result("r1", A, result)
    await running(store, "noise", "t2")
    await checkpoint(store, "noise", n_messages=3)

    stats = await store.storage("r1")
    message_bytes = sum(len(m.SerializeToString()) for m in messages)
    assert stats.checkpoint_bytes == len(rec.SerializeToString())
    assert stats.message_bytes == message_bytes
    assert stats.event_bytes == sum(len(e.SerializeToString()) for e in events)
    assert stats.tool_result_bytes == len(result.SerializeToString())
    assert stats.by_checkpoint == [len(rec.SerializeToString()) + message_bytes]
    assert stats.state_bytes == stats.checkpoint_bytes + stats.message_bytes
    empty = await store.storage("unknown")
    assert (empty.checkpoint_bytes, empty.message_bytes, empty.by_checkpoint) == (0, 0, [])
