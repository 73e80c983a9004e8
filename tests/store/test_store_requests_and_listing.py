"""Request ids, run and thread listings: the Store contract on SQLite and Postgres alike."""

from __future__ import annotations

import asyncio

import pytest

from agentloop.internal.v1 import checkpoint_pb2
from agentloop.kernel.errors import AlreadyExists, NotFound
from agentloop.v1 import agent_pb2, common_pb2
from gateway.store.base import CheckpointWrite, RequestReplayed
from gateway.store.sql import SqlStore

USER, OTHER = "user-1", "user-2"


async def test_a_request_id_names_one_run_per_user(store: SqlStore) -> None:
    await store.create_thread("t1", USER)
    first = await store.create_run("r1", "t1", USER, b"", request_id="req-1")
    assert first.request_id == "req-1"
    assert await store.run_by_request(USER, "req-1") == first
    with pytest.raises(RequestReplayed) as replay:
        await store.create_run("r2", "t1", USER, b"", owner="gw", request_id="req-1")
    assert replay.value.run_id == "r1"
    assert await store.get_run("r2") is None
    # Another user's key is another key; runs without a key never collide.
    await store.create_thread("t1", OTHER)
    assert (await store.create_run("r3", "t1", OTHER, b"", request_id="req-1")).request_id == "req-1"
    assert await store.run_by_request(OTHER, "req-1") is not None
    await store.create_run("r4", "t1", USER, b"")
    await store.create_run("r5", "t1", USER, b"")
    assert (await store.get_run("r5")) is not None
    assert await store.run_by_request(USER, "nope") is None


async def test_concurrent_requests_with_one_id_create_one_run(store: SqlStore) -> None:
    for i in range(4):
        await store.create_thread(f"t{i}", USER)

    async def attempt(i: int) -> str:
        try:
            return (await store.create_run(f"r{i}", f"t{i}", USER, b"", request_id="same")).run_id
        except RequestReplayed as replay:
            return replay.run_id

    winners = set(await asyncio.gather(*(attempt(i) for i in range(4))))
    assert len(winners) == 1
    assert (await store.run_by_request(USER, "same")).run_id in winners  # type: ignore[union-attr]


async def test_runs_and_threads_are_listed_newest_first_a_page_at_a_time(store: SqlStore) -> None:
    for thread_id in ("a", "b", "c"):
        await store.create_thread(thread_id, USER)
    await store.create_thread("a", OTHER)
    for i in range(5):
        await store.create_run(f"run-{i}", "b", USER, b"")
    runs = await store.list_runs("b", 3, user_id=USER)
    assert [r.run_id for r in runs] == ["run-4", "run-3", "run-2"]
    after = (runs[-1].created_at, runs[-1].run_id)
    assert [r.run_id for r in await store.list_runs("b", 3, after, user_id=USER)] == ["run-1", "run-0"]
    assert await store.list_runs("b", 3, user_id=OTHER) == []
    # Creating a run touches its thread: "b" is now the most recently updated.
    threads = await store.list_threads(USER, 2)
    assert [t.thread_id for t in threads] == ["b", "c"]
    after = (threads[-1].updated_at, threads[-1].thread_id)
    assert [t.thread_id for t in await store.list_threads(USER, 2, after)] == ["a"]
    assert [t.thread_id for t in await store.list_threads(OTHER, 10)] == ["a"]


async def test_pages_neither_repeat_nor_skip_items_when_others_change_between_them(store: SqlStore) -> None:
    """Keyset pages: a write between two pages moves or adds items, never shifts the next page."""
    for i in range(6):
        await store.create_thread(f"t{i}", USER)
    first = await store.list_threads(USER, 3)
    assert [t.thread_id for t in first] == ["t5", "t4", "t3"]
    # t4 (already listed) gets new activity and moves to the front; a new thread appears.
    await store.create_run("r-t4", "t4", USER, b"")
    await store.create_thread("t6", USER)
    rest = await store.list_threads(USER, 10, (first[-1].updated_at, first[-1].thread_id))
    assert [t.thread_id for t in rest] == ["t2", "t1", "t0"]

    for i in range(4):
        await store.create_run(f"run-{i}", "t0", USER, b"")
    page = await store.list_runs("t0", 2, user_id=USER)
    await store.create_run("run-new", "t1", USER, b"")
    after = (page[-1].created_at, page[-1].run_id)
    assert [r.run_id for r in await store.list_runs("t0", 10, after, user_id=USER)] == ["run-1", "run-0"]


async def test_a_fork_copies_the_first_messages_into_a_thread_of_its_own(store: SqlStore) -> None:
    await store.create_thread("t1", USER)
    await store.create_run("r1", "t1", USER, b"", owner="gw")
    said = [common_pb2.Message(role=common_pb2.ROLE_USER, content=f"m{i}") for i in range(5)]
    record = checkpoint_pb2.CheckpointRecord(node="agent", message_count=5)
    await store.write_checkpoint(CheckpointWrite(run_id="r1", owner="gw", record=record, new_messages=said))
    fork = await store.fork_thread("t1", "t2", 3, user_id=USER)
    assert (fork.thread_id, fork.user_id, fork.message_count) == ("t2", USER, 3)
    assert await store.thread_messages("t2", user_id=USER) == said[:3]
    assert await store.thread_messages("t1", user_id=USER) == said
    assert await store.latest_run("t2", user_id=USER) is None
    with pytest.raises(AlreadyExists):
        await store.fork_thread("t1", "t2", 1, user_id=USER)
    with pytest.raises(NotFound):
        await store.fork_thread("t1", "t3", 1, user_id=OTHER)  # another user's thread is unknown
    assert await store.get_thread("t3", user_id=OTHER) is None


def _field(number: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field (payloads here are under 128 bytes)."""
    assert len(payload) < 128
    return bytes([number << 3 | 2, len(payload)]) + payload


async def test_events_stored_with_removed_fields_are_replayed_without_them(store: SqlStore) -> None:
    """A final event stored when RunFinal still carried the whole thread (field 3) replays bounded."""
    await store.create_thread("t1", USER)
    await store.create_run("r1", "t1", USER, b"")
    thread = common_pb2.Message(role=common_pb2.ROLE_USER, content="the whole thread").SerializeToString()
    old_final = agent_pb2.RunFinal(final_reply="hi").SerializeToString() + _field(3, thread)
    old_event = agent_pb2.RunEvent(run_id="r1", sequence=1).SerializeToString() + _field(9, old_final)
    await store.append_events("r1", [agent_pb2.RunEvent.FromString(old_event)])
    (replayed,) = await store.events("r1", 0)
    assert replayed == agent_pb2.RunEvent(run_id="r1", sequence=1, final=agent_pb2.RunFinal(final_reply="hi"))
    assert replayed.ByteSize() < len(old_event)
