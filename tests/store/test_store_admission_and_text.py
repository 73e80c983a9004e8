"""Retention of paused threads, admission of runs that must not wait, and text Postgres refuses.

On SQLite and Postgres alike (see conftest.py).
"""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from agentloop.internal.v1 import checkpoint_pb2
from agentloop.v1 import common_pb2
from gateway.store.base import CheckpointWrite, RunStatus, ThreadBusy
from gateway.store.sql import SqlStore

USER = "user-1"
OWNER = "gateway-a"


async def _finished(store: SqlStore, run_id: str, thread_id: str, status: RunStatus) -> None:
    await store.create_thread(thread_id, USER)
    await store.create_run(run_id, thread_id, USER, b"request")
    await store.start_run(run_id, OWNER, 30.0)
    await store.write_checkpoint(
        CheckpointWrite(
            run_id=run_id,
            owner=OWNER,
            record=checkpoint_pb2.CheckpointRecord(node="finalize"),
            new_messages=[common_pb2.Message(role=common_pb2.ROLE_USER, content="hi")],
            status=status,
        )
    )


async def test_prune_spares_a_thread_paused_for_approval_and_drops_finished_ones(store: SqlStore) -> None:
    await _finished(store, "done", "t-done", RunStatus.COMPLETED)
    await _finished(store, "waiting", "t-paused", RunStatus.PAUSED)
    stats = await store.prune(keep_last=10, idle_ttl_s=0)
    assert stats.threads_deleted == 1
    assert await store.get_thread("t-done", user_id=USER) is None
    assert await store.get_thread("t-paused", user_id=USER) is not None
    paused = await store.get_run("waiting")
    assert paused is not None
    assert paused.status == RunStatus.PAUSED
    assert len(await store.thread_messages("t-paused", user_id=USER)) == 1


async def test_a_run_created_started_takes_the_thread_with_a_lease(store: SqlStore) -> None:
    await store.create_thread("t", USER)
    row = await store.create_run("r1", "t", USER, b"request", owner=OWNER, lease_s=30.0)
    assert row.status == RunStatus.RUNNING
    assert row.owner == OWNER
    assert row.lease_expires_at is not None
    assert await store.claim_orphans("gateway-b", 30.0, limit=10) == []


async def test_a_refused_started_run_leaves_nothing_and_the_running_run_stays_latest(
    store: SqlStore,
) -> None:
    await store.create_thread("t", USER)
    await store.create_run("first", "t", USER, b"request", owner=OWNER)
    with pytest.raises(ThreadBusy):
        await store.create_run("second", "t", USER, b"request", owner=OWNER)
    assert await store.get_run("second") is None
    latest = await store.latest_run("t", user_id=USER)
    assert latest is not None
    assert (latest.run_id, latest.status) == ("first", RunStatus.RUNNING)


async def test_a_tool_call_id_with_nul_is_recorded_and_read_back_as_given(store: SqlStore) -> None:
    await store.create_thread("t", USER)
    await store.create_run("r", "t", USER, b"request", owner=OWNER)
    odd = common_pb2.ToolResult(tool_call_id="call\x00zero", name="add", content="3")
    plain = common_pb2.ToolResult(tool_call_id="call_1", name="add", content="4")
    await store.record_tool_results("r", OWNER, [odd, plain])
    await store.record_tool_result(
        "r", OWNER, common_pb2.ToolResult(tool_call_id="call\x00zero", content="x")
    )
    results = await store.tool_results("r")
    assert list(results) == ["call\x00zero", "call_1"]
    assert results["call\x00zero"].content == "3"


async def test_a_memory_with_nul_is_stored_with_a_replacement_character(store: SqlStore) -> None:
    added = await store.add_memory(USER, "a\x00b")
    assert added.text == "a\ufffdb"
    assert [m.text for m in await store.list_memories(USER)] == ["a\ufffdb"]


async def test_store_errors_carry_neither_sql_nor_bound_values(store: SqlStore) -> None:
    with pytest.raises(DBAPIError) as info:
        async with store._write() as conn:
            await conn.execute(text("INSERT INTO no_such_table (x) VALUES (:secret)"), {"secret": "hunter2"})
    message = str(info.value)
    assert "hunter2" not in message
    assert "INSERT" not in message
    assert "no_such_table" in message


async def test_thread_ids_are_scoped_per_user(store: SqlStore) -> None:
    """Another user's thread id names another thread: it neither leaks nor blocks."""
    await _finished(store, "ana-run", "shared-name", RunStatus.COMPLETED)
    assert await store.get_thread("shared-name", user_id="bob") is None
    bobs = await store.create_thread("shared-name", "bob")
    assert (bobs.thread_id, bobs.user_id, bobs.message_count) == ("shared-name", "bob", 0)
    run = await store.create_run("bob-run", "shared-name", "bob", b"request", owner=OWNER)
    assert run.thread_id == "shared-name"
    assert await store.thread_messages("shared-name", user_id="bob") == []
    assert len(await store.thread_messages("shared-name", user_id=USER)) == 1
    latest_ana = await store.latest_run("shared-name", user_id=USER)
    latest_bob = await store.latest_run("shared-name", user_id="bob")
    assert latest_ana is not None
    assert latest_ana.run_id == "ana-run"
    assert latest_bob is not None
    assert latest_bob.run_id == "bob-run"
    assert await store.list_checkpoints("shared-name", None, 0, 10, user_id="bob") == []
    assert len(await store.list_checkpoints("shared-name", None, 0, 10, user_id=USER)) == 1
