"""What callers learn about the database itself through the store: is it up, can gateways talk through it.

On SQLite and Postgres alike (see conftest.py).
"""

from __future__ import annotations

import asyncpg
import pytest

from gateway.store.sql import SqlStore


async def test_ping_answers_while_the_database_is_there(store: SqlStore) -> None:
    await store.ping()


async def test_ping_raises_when_the_database_does_not_answer() -> None:
    nowhere = SqlStore("postgresql+asyncpg://agentloop@127.0.0.1:1/nowhere")
    try:
        with pytest.raises(ConnectionRefusedError):
            await nowhere.ping()
    finally:
        await nowhere.close()


async def test_only_postgres_offers_a_live_channel(store: SqlStore, store_url: str) -> None:
    dsn = store.live_dsn
    if store_url.startswith("sqlite"):
        assert dsn is None
        return
    assert dsn is not None
    conn = await asyncpg.connect(dsn)
    try:
        assert await conn.fetchval("SELECT 1") == 1
    finally:
        await conn.close()
