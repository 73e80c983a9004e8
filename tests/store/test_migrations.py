"""Migrations on both backends: fresh databases, data written by an older revision, model drift."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from google.api import field_behavior_pb2
from google.protobuf import descriptor_pb2, descriptor_pool, duration_pb2, message_factory
from sqlalchemy import Connection, inspect, text

from agentloop.internal.v1 import checkpoint_pb2
from agentloop.v1 import agent_pb2, common_pb2
from gateway.store import factory, migrate
from gateway.store.base import RunStatus
from gateway.store.sql import SqlStore, make_engine
from gateway.store.tables import Base

TABLES = {"threads", "runs", "messages", "checkpoints", "tool_results", "run_events"}


def old_checkpoint_record_class() -> Any:
    """CheckpointRecord as it was before fields 10-13 (tools_used … last_sequence) existed.

    Built from the current descriptor with the newer fields removed, so the
    bytes are what a writer of that era produced, not merely a new message
    that happens to leave fields unset. Its package is agentloop.v1, where the
    record lived when those rows were written: the binary encoding carries no
    package name, so the record, now in agentloop.internal.v1, reads them as is.
    """
    pool = descriptor_pool.DescriptorPool()
    # common.proto and the files it imports, imports first
    for module in (descriptor_pb2, field_behavior_pb2, duration_pb2, common_pb2):
        pool.Add(descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb))
    current = descriptor_pb2.FileDescriptorProto.FromString(checkpoint_pb2.DESCRIPTOR.serialized_pb)
    old = descriptor_pb2.FileDescriptorProto(
        name="agentloop/v1/checkpoint_v0.proto",
        package="agentloop.v1",
        syntax=current.syntax,
        dependency=["agentloop/v1/common.proto"],
    )
    record = next(m for m in current.message_type if m.name == "CheckpointRecord")
    kept = old.message_type.add(name="CheckpointRecord")
    kept.field.extend(f for f in record.field if f.number <= 9)
    pool.Add(old)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("agentloop.v1.CheckpointRecord"))


async def test_a_fresh_database_upgrades_to_head_and_again_is_a_no_op(empty_url: str) -> None:
    assert await migrate.current_revision_async(empty_url) is None
    await migrate.upgrade_async(empty_url)
    assert await migrate.current_revision_async(empty_url) == migrate.head_revision() == "0006_secrets"
    await migrate.upgrade_async(empty_url)
    assert await migrate.current_revision_async(empty_url) == migrate.head_revision()
    engine = make_engine(empty_url)
    try:
        async with engine.connect() as conn:
            names = await conn.run_sync(lambda c: set(inspect(c).get_table_names()))
    finally:
        await engine.dispose()
    assert names >= {*TABLES, "memories", "alembic_version"}


async def test_the_models_match_the_migrations(empty_url: str) -> None:
    """tables.py and the hand-written revisions describe the same schema."""
    await migrate.upgrade_async(empty_url)

    def diff(conn: Connection) -> list[Any]:
        return list(compare_metadata(MigrationContext.configure(conn), Base.metadata))

    engine = make_engine(empty_url)
    try:
        async with engine.connect() as conn:
            assert await conn.run_sync(diff) == []
    finally:
        await engine.dispose()


async def test_downgrade_and_upgrade_round_trip(empty_url: str) -> None:
    await migrate.upgrade_async(empty_url)
    cfg = migrate.alembic_config(empty_url)
    engine = make_engine(empty_url)
    try:
        async with engine.connect() as conn:

            def down(c: Connection) -> set[str]:
                cfg.attributes["connection"] = c
                command.downgrade(cfg, "0001")
                return set(inspect(c).get_table_names())

            names = await conn.run_sync(down)
            await conn.commit()
    finally:
        await engine.dispose()
    assert "memories" not in names
    assert names >= TABLES
    assert await migrate.current_revision_async(empty_url) == "0001"
    await migrate.upgrade_async(empty_url)
    assert await migrate.current_revision_async(empty_url) == migrate.head_revision()


async def test_rows_written_at_revision_0001_read_back_after_upgrading(empty_url: str) -> None:
    await migrate.upgrade_async(empty_url, "0001")
    assert await migrate.current_revision_async(empty_url) == "0001"

    old_record = old_checkpoint_record_class()(
        node="finalize",
        next_node="",
        current_step=2,
        llm_calls=3,
        usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        stop=True,
        stop_reason="answered",
        final_reply="4",
        message_count=2,
    )
    record_bytes = old_record.SerializeToString()
    messages = [
        common_pb2.Message(role=common_pb2.ROLE_USER, content="2+2?"),
        common_pb2.Message(role=common_pb2.ROLE_ASSISTANT, content="4"),
    ]
    result = common_pb2.ToolResult(tool_call_id="c1", name="calc", content="4")
    run_event = agent_pb2.RunEvent(run_id="r1", sequence=1, thread_id="t1")
    request = agent_pb2.RunRequest(input="2+2?", user_id="u1").SerializeToString()

    engine = make_engine(empty_url)
    stamp: Any = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)
    if engine.dialect.name == "sqlite":
        stamp = "2024-05-06 07:08:09.000000"  # how SQLAlchemy wrote naive UTC text at 0001
    try:
        async with engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO threads (thread_id, user_id, created_at, updated_at, message_count)"
                    " VALUES ('t1', 'u1', :ts, :ts, 2)"
                ),
                {"ts": stamp},
            )
            await conn.execute(
                text(
                    "INSERT INTO runs (run_id, thread_id, user_id, status, request, owner,"
                    " lease_expires_at, cancel_requested, checkpoint_count, last_sequence,"
                    " created_at, updated_at) VALUES ('r1', 't1', 'u1', 'completed', :request,"
                    " NULL, NULL, :no, 1, 1, :ts, :ts)"
                ),
                {"request": request, "ts": stamp, "no": False},
            )
            for idx, message in enumerate(messages):
                await conn.execute(
                    text("INSERT INTO messages (thread_id, idx, run_id, data) VALUES ('t1', :i, 'r1', :d)"),
                    {"i": idx, "d": message.SerializeToString()},
                )
            await conn.execute(
                text(
                    "INSERT INTO checkpoints (run_id, thread_id, idx, record, delta_bytes, created_at)"
                    " VALUES ('r1', 't1', 1, :record, :delta, :ts)"
                ),
                {"record": record_bytes, "delta": len(record_bytes), "ts": stamp},
            )
            await conn.execute(
                text("INSERT INTO tool_results (run_id, tool_call_id, data) VALUES ('r1', 'c1', :d)"),
                {"d": result.SerializeToString()},
            )
            await conn.execute(
                text("INSERT INTO run_events (run_id, sequence, data) VALUES ('r1', 1, :d)"),
                {"d": run_event.SerializeToString()},
            )
    finally:
        await engine.dispose()

    await migrate.upgrade_async(empty_url)
    assert await migrate.current_revision_async(empty_url) == migrate.head_revision()

    store = SqlStore(empty_url)
    try:
        cp = await store.latest_checkpoint("r1")
        assert cp is not None
        assert (cp.record.node, cp.record.final_reply, cp.record.message_count) == ("finalize", "4", 2)
        assert cp.record.usage.total_tokens == 15
        assert list(cp.record.tools_used) == []
        assert cp.record.tool_calls == 0
        assert cp.record.last_sequence == 0
        assert not cp.record.HasField("error")
        assert cp.created_at == datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)
        run = await store.get_run("r1")
        assert run is not None
        assert run.status is RunStatus.COMPLETED
        assert run.request == request
        assert run.created_at == datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)
        # Revision 0004: runs written before it have reserved nothing beyond their last event.
        assert (run.sequence_reserved, run.next_sequence_base) == (0, 1)
        assert await store.thread_messages("t1", user_id="u1") == messages
        assert await store.tool_results("r1") == {"c1": result}
        assert await store.events("r1", 0) == [run_event]
        thread = await store.get_thread("t1", user_id="u1")
        assert thread is not None
        assert thread.message_count == 2
        latest = await store.latest_run("t1", user_id="u1")
        assert latest is not None
        assert (latest.run_id, latest.thread_id) == ("r1", "t1")
        assert [c.checkpoint_id for c in await store.list_checkpoints("t1", None, 0, 10, user_id="u1")] == [
            "r1:1"
        ]
        # The thread became u1's: another user's "t1" is another, new thread.
        assert await store.get_thread("t1", user_id="u2") is None
        assert (await store.create_thread("t1", "u2")).message_count == 0
        assert len(await store.thread_messages("t1", user_id="u1")) == 2
        async with store.engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO memories (memory_id, user_id, text, created_at)"
                    " VALUES ('m1', 'u1', 'x', :ts)"
                ),
                {"ts": stamp},
            )
            assert (await conn.execute(text("SELECT count(*) FROM memories"))).scalar_one() == 1
    finally:
        await store.close()


# --- opening a store -----------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("postgresql://u:p%40ss@db:5432/agent", "postgresql+asyncpg://u:p%40ss@db:5432/agent"),
        ("postgres://u@db/agent", "postgresql+asyncpg://u@db/agent"),
        ("postgresql+asyncpg://u@db/agent", "postgresql+asyncpg://u@db/agent"),
        ("sqlite:///relative.db", "sqlite+aiosqlite:///relative.db"),
        ("sqlite:////abs/agent.db", "sqlite+aiosqlite:////abs/agent.db"),
        ("sqlite+aiosqlite:///x.db", "sqlite+aiosqlite:///x.db"),
    ],
)
def test_resolve_url_picks_the_async_drivers(given: str, expected: str) -> None:
    assert factory.resolve_url(given) == expected


def test_resolve_url_rejects_other_databases() -> None:
    with pytest.raises(ValueError, match="mysql"):
        factory.resolve_url("mysql://u@db/agent")


def test_the_default_database_lives_under_agentloop_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTLOOP_HOME", str(tmp_path / "home"))
    assert factory.resolve_url(None) == f"sqlite+aiosqlite:///{tmp_path / 'home' / 'agentloop.db'}"
    assert factory.resolve_url("") == factory.default_sqlite_url()
    assert (tmp_path / "home").is_dir()
    monkeypatch.delenv("AGENTLOOP_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    expected = tmp_path / "user" / ".local" / "share" / "agentloop"
    assert factory.default_sqlite_url() == f"sqlite+aiosqlite:///{expected / 'agentloop.db'}"
    assert expected.is_dir()


async def test_open_store_migrates_and_configures_sqlite(tmp_path: Path) -> None:
    store = await factory.open_store(f"sqlite:///{tmp_path / 'agent.db'}")
    try:
        assert (
            await migrate.current_revision_async(f"sqlite:///{tmp_path / 'agent.db'}")
            == migrate.head_revision()
        )
        async with store.engine.connect() as conn:
            pragmas = [
                (await conn.exec_driver_sql(f"PRAGMA {name}")).scalar_one()
                for name in ("journal_mode", "busy_timeout", "foreign_keys")
            ]
        assert pragmas == ["wal", 5000, 1]
        assert (await store.create_thread("t1", "u1")).thread_id == "t1"
    finally:
        await store.close()


async def test_open_store_migrates_a_new_database(empty_url: str) -> None:
    store = await factory.open_store(empty_url, pool_size=4)
    try:
        assert await migrate.current_revision_async(empty_url) == migrate.head_revision()
        await store.create_thread("t1", "u1")
        assert (await store.get_thread("t1", user_id="u1")) is not None
    finally:
        await store.close()


def test_sync_upgrade_and_current_revision(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sync.db'}"
    assert migrate.current_revision(url) is None
    migrate.upgrade(url, "0001")
    assert migrate.current_revision(url) == "0001"
    migrate.upgrade(url)
    assert migrate.current_revision(url) == migrate.head_revision()


def test_an_in_memory_sqlite_database_is_refused() -> None:
    with pytest.raises(ValueError, match="file"):
        SqlStore("sqlite+aiosqlite:///:memory:")
