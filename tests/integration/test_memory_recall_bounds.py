"""Recall reads a bounded number of a user's facts, so a user with many never costs a run a huge sort.

Each run recalls its user's memories. It read them all, sorted, every time:
for a user with tens of thousands of facts that sort spilled tens of
megabytes to temporary files per run (a gigabyte and more with more facts).
Recall now ranks the newest RECALL_CANDIDATES facts, a sort Postgres does
in memory; here the gateway's temp_file_limit is 1 MB, which the old read
broke on every run.
"""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from agentloop.scripted_model import Script
from gateway.loop.memory import RECALL_CANDIDATES
from gateway.store import migrate
from tests.support.postgres import fresh_postgres_database
from tests.support.stack import final_of, start_stack

pytestmark = pytest.mark.integration

FACTS = 20_000


async def test_a_run_of_a_user_with_many_memories_recalls_within_a_small_temp_file_limit() -> None:
    assert FACTS > RECALL_CANDIDATES
    async with fresh_postgres_database() as url:
        await migrate.upgrade_async(url)
        engine = create_async_engine(url)
        try:
            async with engine.begin() as conn:
                await conn.execute(
                    text(
                        "INSERT INTO memories (memory_id, user_id, text, created_at) "
                        "SELECT md5(i::text), 'ana', 'filler ' || repeat(md5(i::text), 60), "
                        "now() - i * interval '1 second' FROM generate_series(1, :n) i"
                    ),
                    {"n": FACTS},
                )
                await conn.execute(
                    text("INSERT INTO memories VALUES ('m-name', 'ana', 'my name is Ana', now())")
                )
        finally:
            await engine.dispose()
        stack = await start_stack(Script(), database_url=url, gateway_overrides={"db_temp_file_limit": "1MB"})
        try:
            events = await stack.run("what is my name?", user_id="ana")
        finally:
            await stack.close()
    assert events[-1].WhichOneof("event") == "final", events[-1]
    recalled = [e.decision.detail for e in events if e.WhichOneof("event") == "decision"]
    assert any("my name is Ana" in detail for detail in recalled), recalled
    assert final_of(events).final_reply
