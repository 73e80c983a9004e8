"""A run's memories go through the same retries as its checkpoints: a busy database delays, never fails.

Another process holds the SQLite file's write lock just as a run keeps a
memory ("remember that …"); the write waits out the busy timeout, meets
"database is locked", and is tried again until the lock is gone. The run
then finishes with the fact stored, where it used to end INTERNAL.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from agentloop.scripted_model import Script
from agentloop.v1 import agent_pb2
from gateway.store import engine as engine_module
from gateway.store import migrate
from gateway.store.base import Memory
from gateway.store.sql import SqlStore
from tests.support.stack import final_of, kinds, start_stack

pytestmark = pytest.mark.integration

LOCK_HELD_S = 0.6


class LockedWhenRemembering(SqlStore):
    """The real store, on a file whose write lock another connection takes as a memory is written."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"sqlite+aiosqlite:///{path}")
        self._path = path
        self.locked = 0

    async def add_memory(self, user_id: str, text: str) -> Memory:
        holder = sqlite3.connect(self._path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        self.locked += 1
        asyncio.get_running_loop().call_later(LOCK_HELD_S, _release, holder)
        return await super().add_memory(user_id, text)


def _release(holder: sqlite3.Connection) -> None:
    holder.execute("ROLLBACK")
    holder.close()


async def test_a_memory_written_while_the_database_is_locked_is_kept_and_the_run_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Fail fast on the lock (5 s otherwise) so that the write meets "database is locked".
    monkeypatch.setattr(engine_module, "SQLITE_BUSY_TIMEOUT_MS", 100)
    path = tmp_path / "agentloop.db"
    await migrate.upgrade_async(f"sqlite+aiosqlite:///{path}")
    store = LockedWhenRemembering(path)
    stack = await start_stack(Script(), store=store)
    try:
        events = await stack.run("remember that my name is Ana", user_id="ana", deadline_s=30)
        memories = await stack.agent.ListMemories(agent_pb2.ListMemoriesRequest(user_id="ana"), timeout=10)
    finally:
        await stack.close()
    assert store.locked == 1
    assert kinds(events)[-1] == "final", [e.error.message for e in events if e.HasField("error")]
    assert final_of(events).final_reply
    assert "decision" in kinds(events)
    assert [m.text for m in memories.memories] == ["my name is Ana"]
