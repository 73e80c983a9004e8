"""`SqlStore`'s threads: created per user, listed, forked, and their messages read."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import and_, func, literal, null, or_, select, update
from sqlalchemy.exc import IntegrityError

from agentloop.kernel.errors import AlreadyExists, NotFound, Reason
from agentloop.v1 import common_pb2
from gateway.store import tables as t
from gateway.store.base import ThreadRow
from gateway.store.rows import thread_row, utc_now
from gateway.store.scope import thread_key
from gateway.store.sqlbase import SqlBase


class ThreadQueries(SqlBase):
    """A thread's key is its user and the client's id together (`gateway.store.scope`)."""

    async def get_thread(self, thread_id: str, *, user_id: str) -> ThreadRow | None:
        key = thread_key(user_id, thread_id)
        async with self._read() as conn:
            row = (
                (await conn.execute(select(t.threads).where(t.threads.c.thread_id == key)))
                .mappings()
                .one_or_none()
            )
        return None if row is None else thread_row(row)

    async def create_thread(self, thread_id: str, user_id: str) -> ThreadRow:
        now = utc_now()
        key = thread_key(user_id, thread_id)
        async with self._write() as conn:
            await conn.execute(
                self._dialect.insert_ignoring(t.threads, "thread_id").values(
                    thread_id=key, user_id=user_id, created_at=now, updated_at=now, message_count=0
                )
            )
            row = (await conn.execute(select(t.threads).where(t.threads.c.thread_id == key))).mappings().one()
        return thread_row(row)

    async def thread_messages(
        self, thread_id: str, limit: int | None = None, *, user_id: str, offset: int = 0
    ) -> list[common_pb2.Message]:
        stmt = (
            select(t.messages.c.data)
            .where(t.messages.c.thread_id == thread_key(user_id, thread_id), t.messages.c.idx >= offset)
            .order_by(t.messages.c.idx)
            .limit(limit)
        )
        async with self._read() as conn:
            rows = (await conn.execute(stmt)).scalars().all()
        return [common_pb2.Message.FromString(data) for data in rows]

    async def fork_thread(
        self,
        thread_id: str,
        new_thread_id: str,
        upto: int,
        *,
        user_id: str,
        closing: Sequence[common_pb2.Message] = (),
    ) -> ThreadRow:
        now = utc_now()
        source, key = thread_key(user_id, thread_id), thread_key(user_id, new_thread_id)
        threads, messages = t.threads, t.messages
        try:
            async with self._write() as conn:
                found = await conn.execute(select(threads.c.thread_id).where(threads.c.thread_id == source))
                if found.first() is None:
                    raise NotFound(f"thread {thread_id} not found", reason=Reason.THREAD_NOT_FOUND)
                await conn.execute(
                    threads.insert().values(
                        thread_id=key, user_id=user_id, created_at=now, updated_at=now, message_count=0
                    )
                )
                # The copies belong to no run of the new thread (run_id NULL).
                copied = select(literal(key), messages.c.idx, null(), messages.c.data).where(
                    messages.c.thread_id == source, messages.c.idx < upto
                )
                await conn.execute(
                    messages.insert().from_select(["thread_id", "idx", "run_id", "data"], copied)
                )
                if closing:
                    base = select(func.count()).where(messages.c.thread_id == key)
                    first = (await conn.execute(base)).scalar_one()
                    await conn.execute(
                        messages.insert(),
                        [
                            {
                                "thread_id": key,
                                "idx": first + i,
                                "run_id": None,
                                "data": m.SerializeToString(),
                            }
                            for i, m in enumerate(closing)
                        ],
                    )
                count = select(func.count()).where(messages.c.thread_id == key).scalar_subquery()
                await conn.execute(
                    update(threads).where(threads.c.thread_id == key).values(message_count=count)
                )
                row = (await conn.execute(select(threads).where(threads.c.thread_id == key))).mappings().one()
        except IntegrityError:
            raise AlreadyExists(
                f"thread {new_thread_id} already exists",
                reason=Reason.THREAD_EXISTS,
                metadata={"thread_id": new_thread_id},
            ) from None
        return thread_row(row)

    async def list_threads(
        self, user_id: str, limit: int, after: tuple[datetime, str] | None = None
    ) -> list[ThreadRow]:
        th = t.threads.c
        stmt = (
            select(t.threads)
            .where(th.user_id == user_id)
            .order_by(th.updated_at.desc(), th.thread_id.desc())
            .limit(limit)
        )
        if after is not None:
            updated_at, key = after[0], thread_key(user_id, after[1])
            stmt = stmt.where(
                or_(th.updated_at < updated_at, and_(th.updated_at == updated_at, th.thread_id < key))
            )
        async with self._read() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [thread_row(row) for row in rows]
