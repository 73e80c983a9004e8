"""`SqlStore`'s long-term memories: facts kept per user, outside any thread (see `gateway.loop.memory`)."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import and_, delete, or_, select

from gateway.store import tables as t
from gateway.store.base import Memory
from gateway.store.rows import memory_row, utc_now
from gateway.store.sqlbase import SqlBase
from gateway.store.storable import storable


class MemoryQueries(SqlBase):
    """A user's facts; never another user's, and not deleted with the user's threads."""

    async def add_memory(self, user_id: str, text: str) -> Memory:
        memory = Memory(uuid.uuid4().hex, user_id, storable(text), utc_now())
        async with self._write() as conn:
            await conn.execute(
                t.memories.insert().values(
                    memory_id=memory.memory_id,
                    user_id=user_id,
                    text=memory.text,
                    created_at=memory.created_at,
                )
            )
        return memory

    async def list_memories(
        self, user_id: str, limit: int | None = None, after: tuple[datetime, str] | None = None
    ) -> list[Memory]:
        mem = t.memories.c
        stmt = (
            select(t.memories)
            .where(mem.user_id == user_id)
            .order_by(mem.created_at.desc(), mem.memory_id)
            .limit(limit)
        )
        if after is not None:
            created_at, memory_id = after
            stmt = stmt.where(
                or_(
                    mem.created_at < created_at, and_(mem.created_at == created_at, mem.memory_id > memory_id)
                )
            )
        async with self._read() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [memory_row(row) for row in rows]

    async def delete_memory(self, user_id: str, memory_id: str) -> bool:
        mem = t.memories.c
        async with self._write() as conn:
            result = await conn.execute(
                delete(t.memories).where(mem.user_id == user_id, mem.memory_id == memory_id)
            )
        return bool(result.rowcount)
