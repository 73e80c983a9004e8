"""Revision 0003_thread_scope on both backends: stored thread keys become per-user, and back."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from alembic import command
from sqlalchemy import Connection, text

from gateway.store import migrate
from gateway.store.sql import make_engine

_TABLES = ("threads", "runs", "messages", "checkpoints")


async def _thread_ids(url: str) -> dict[str, list[str]]:
    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            return {
                table: list((await conn.execute(text(f"SELECT thread_id FROM {table} ORDER BY 1"))).scalars())
                for table in _TABLES
            }
    finally:
        await engine.dispose()


async def _seed_at_0002(url: str) -> None:
    await migrate.upgrade_async(url, "0002")
    engine = make_engine(url)
    stamp: Any = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)
    if engine.dialect.name == "sqlite":
        stamp = "2024-05-06 07:08:09.000000"
    statements = [
        "INSERT INTO threads (thread_id, user_id, created_at, updated_at, message_count)"
        " VALUES ('t1', 'ana', :ts, :ts, 1), ('t2', 'bob', :ts, :ts, 0)",
        "INSERT INTO runs (run_id, thread_id, user_id, status, request, created_at, updated_at)"
        " VALUES ('r1', 't1', 'ana', 'completed', :blob, :ts, :ts)",
        "INSERT INTO messages (thread_id, idx, run_id, data) VALUES ('t1', 0, 'r1', :blob)",
        "INSERT INTO checkpoints (run_id, thread_id, idx, record, delta_bytes, created_at)"
        " VALUES ('r1', 't1', 1, :blob, 1, :ts)",
    ]
    try:
        async with engine.begin() as conn:
            for statement in statements:
                await conn.execute(text(statement), {"ts": stamp, "blob": b"x"})
    finally:
        await engine.dispose()


async def _downgrade(url: str, revision: str) -> None:
    cfg = migrate.alembic_config(url)
    engine = make_engine(url)
    try:
        async with engine.connect() as conn:

            def down(c: Connection) -> None:
                cfg.attributes["connection"] = c
                command.downgrade(cfg, revision)

            await conn.run_sync(down)
            await conn.commit()
    finally:
        await engine.dispose()


async def test_thread_keys_are_scoped_on_upgrade_and_unscoped_on_downgrade(empty_url: str) -> None:
    await _seed_at_0002(empty_url)
    await migrate.upgrade_async(empty_url)
    scoped = await _thread_ids(empty_url)
    assert scoped == {
        "threads": ["ana\x1ft1", "bob\x1ft2"],
        "runs": ["ana\x1ft1"],
        "messages": ["ana\x1ft1"],
        "checkpoints": ["ana\x1ft1"],
    }
    await _downgrade(empty_url, "0002")
    assert await _thread_ids(empty_url) == {
        "threads": ["t1", "t2"],
        "runs": ["t1"],
        "messages": ["t1"],
        "checkpoints": ["t1"],
    }
