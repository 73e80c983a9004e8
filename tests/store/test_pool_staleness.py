"""Pooled Postgres connections killed by the server: pinged when idle, retried when not.

The engine pings a connection on checkout only after it sat idle for more
than IDLE_PING_S (`gateway.store.engine`); a connection that broke while
recently used fails its statement and the store's retries run it again.
Both paths are driven here with real server-side terminations.
"""

from __future__ import annotations

import asyncpg
import pytest
from sqlalchemy import text

from gateway.journal.run_journal import with_store_retries
from gateway.store import engine as engine_module
from gateway.store.engine import make_engine


def _libpq(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://", 1)


async def _terminate_pool_backends(url: str, application_pids: list[int]) -> None:
    admin = await asyncpg.connect(_libpq(url))
    try:
        for pid in application_pids:
            await admin.execute("SELECT pg_terminate_backend($1)", pid)
    finally:
        await admin.close()


async def _backend_pid(engine: object) -> int:
    async with engine.connect() as conn:  # type: ignore[attr-defined]
        return int((await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one())


async def test_an_idle_connection_killed_by_the_server_is_replaced_on_checkout(
    postgres_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine_module, "IDLE_PING_S", 0.0)
    engine = make_engine(postgres_database, pool_size=1, max_overflow=0)
    try:
        first = await _backend_pid(engine)
        await _terminate_pool_backends(postgres_database, [first])
        second = await _backend_pid(engine)  # the ping fails, the pool connects anew
        assert second != first
    finally:
        await engine.dispose()


async def test_a_recently_used_connection_killed_by_the_server_fails_once_and_the_retry_succeeds(
    postgres_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine_module, "IDLE_PING_S", 3600.0)
    engine = make_engine(postgres_database, pool_size=1, max_overflow=0)
    attempts: list[int] = []

    async def read() -> int:
        attempts.append(1)
        return await _backend_pid(engine)

    try:
        first = await _backend_pid(engine)
        await _terminate_pool_backends(postgres_database, [first])
        second = await with_store_retries(read, "read the backend pid")
        assert second != first
        assert len(attempts) == 2, "no ping: the first attempt met the dead connection"
    finally:
        await engine.dispose()
