"""Postgres: each query of the gateway may spill at most `temp_file_limit` to disk, and past it fails cleanly.

A sort that does not fit in work_mem writes temporary files; without a
bound, one listing of a user with many memories wrote gigabytes. The
gateway's connections set the limit (AGENTLOOP_DB_TEMP_FILE_LIMIT), and a
query that breaks it is QueryTooLarge (RESOURCE_EXHAUSTED), never INTERNAL.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest
from sqlalchemy import text

from gateway.store.errors import QueryTooLarge
from gateway.store.sql import SqlStore

FACTS = 20_000


@pytest.fixture
async def crowded(postgres_database: str) -> AsyncIterator[str]:
    """The store's database with one user holding FACTS memories of about 2 KB (40 MB in all)."""
    store = SqlStore(postgres_database)
    try:
        async with store.engine.begin() as conn:
            await conn.execute(text("DELETE FROM memories"))
            await conn.execute(
                text(
                    "INSERT INTO memories (memory_id, user_id, text, created_at) "
                    "SELECT md5(i::text), 'ana', repeat(md5(i::text), 60), now() - i * interval '1 second' "
                    "FROM generate_series(1, :n) i"
                ),
                {"n": FACTS},
            )
        yield postgres_database
    finally:
        async with store.engine.begin() as conn:
            await conn.execute(text("DELETE FROM memories"))
        await store.close()


async def _setting(store: SqlStore) -> str:
    async with store.engine.connect() as conn:
        return str((await conn.execute(text("SHOW temp_file_limit"))).scalar_one())


async def test_the_gateway_connections_carry_the_limit(postgres_database: str) -> None:
    default, chosen = SqlStore(postgres_database), SqlStore(postgres_database, temp_file_limit="1MB")
    try:
        assert await _setting(default) == "256MB"
        assert await _setting(chosen) == "1MB"
    finally:
        await default.close()
        await chosen.close()


async def test_a_query_past_the_limit_is_a_clean_resource_exhausted(crowded: str) -> None:
    store = SqlStore(crowded, temp_file_limit="1MB")
    try:
        with pytest.raises(QueryTooLarge) as info:
            await store.list_memories("ana")  # every fact, sorted: spills far past 1 MB
        assert info.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "SELECT" not in info.value.message
        # A page is sorted in memory (top-N), whatever the limit.
        assert len(await store.list_memories("ana", limit=1000)) == 1000
    finally:
        await store.close()
