"""`SqlStore`: the `Store` on Postgres (asyncpg) or SQLite (aiosqlite) through SQLAlchemy Core.

Correctness rests on the database, not on Python: ownership is a
compare-and-set `UPDATE … WHERE owner = :me AND status = 'running'` whose row
count says whether the caller still owns the run, one RUNNING run per thread is
a partial unique index, and appends take their positions from counters bumped
inside the same transaction. So any number of gateways (processes, or engines
in one process) can share a database.

SQLite: every write transaction starts with `BEGIN IMMEDIATE`. A deferred
transaction that reads and then writes cannot wait for the write lock in WAL
mode (it fails with SQLITE_BUSY at once); taking the lock up front lets
`busy_timeout` queue writers instead. Within one process, writers to a SQLite
file also queue on an asyncio lock first: SQLite admits one writer at a time
anyway, and its busy handler polls with growing sleeps, so fifty concurrent
runs polling the file lock would starve some past the timeout. Postgres
writers never share a lock.

The write hot path (`write_checkpoint`, `record_tool_results`) runs once or
more per step of every run, so it bypasses SQLAlchemy's statement machinery
for fixed SQL handed to the driver; see `gateway.store.hotpath`. Everything
else is SQLAlchemy Core, where clarity is worth more than its per-call cost.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any, TypeVar

import asyncpg
from sqlalchemy import and_, case, delete, func, literal, null, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.schema import Table
from sqlalchemy.util import greenlet_spawn

from agentloop.errors import AlreadyExists, FailedPrecondition, NotFound
from agentloop.v1 import agent_pb2, common_pb2
from gateway.storable import storable
from gateway.store import tables as t
from gateway.store.base import (
    CheckpointRow,
    CheckpointWrite,
    LeaseLost,
    PruneStats,
    RequestReplayed,
    RunRow,
    RunStatus,
    StorageStats,
    Store,
    ThreadBusy,
    ThreadRow,
)
from gateway.store.engine import BEGIN_OPTION, SQLITE_BUSY_TIMEOUT_MS, make_engine, to_async_url
from gateway.store.errors import scrubbed
from gateway.store.hotpath import (
    PG_RECORD_TOOL_RESULTS,
    PG_WRITE_CHECKPOINT,
    run_to_completion,
    sqlite_in_transaction,
    sqlite_record_tool_results,
    sqlite_write_checkpoint,
)
from gateway.store.rows import (
    CANCELLED,
    QUEUED,
    RUNNING,
    checkpoint_row,
    expired,
    greatest,
    run_row,
    sqlite_run_row,
    sqlite_text,
    stored_event,
    thread_row,
    utc_now,
)
from gateway.store.scope import thread_key

# Re-exported: callers import these from here since before the split.
__all__ = ["DEFAULT_LEASE_S", "SQLITE_BUSY_TIMEOUT_MS", "SqlStore", "make_engine", "to_async_url"]

DEFAULT_LEASE_S = 30.0

_T = TypeVar("_T")


class SqlStore(Store):
    """The Store on one SQLAlchemy `AsyncEngine` (Postgres or SQLite).

    `lease_s` is how long `write_checkpoint` and `record_tool_results` extend
    the writer's lease: the methods that take no lease argument but prove the
    owner is alive.
    """

    def __init__(
        self,
        url: str,
        *,
        lease_s: float = DEFAULT_LEASE_S,
        pool_size: int = 20,
        max_overflow: int = 10,
    ) -> None:
        self._engine = make_engine(url, pool_size=pool_size, max_overflow=max_overflow)
        self._writer = self._engine.execution_options(**{BEGIN_OPTION: "IMMEDIATE"})
        self._dialect = self._engine.dialect.name
        self.lease_s = lease_s
        self._sqlite_writer = asyncio.Lock() if self._dialect == "sqlite" else None

    @property
    def engine(self) -> AsyncEngine:
        return self._engine

    @property
    def dialect(self) -> str:
        """The SQLAlchemy dialect name, for the few statements that differ (postgresql, sqlite)."""
        return self._dialect

    # --- plumbing ----------------------------------------------------------
    @asynccontextmanager
    async def _write(self) -> AsyncIterator[AsyncConnection]:
        """A transaction that will write: commits on success, rolls back on any exception."""
        with scrubbed():
            if self._sqlite_writer is None:
                async with self._writer.begin() as conn:
                    yield conn
                return
            async with self._sqlite_writer, self._writer.begin() as conn:
                yield conn

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[AsyncConnection]:
        """A plain (deferred) transaction, rolled back on exit: readers never queue behind writers."""
        with scrubbed():
            async with self._engine.connect() as conn:
                yield conn

    @asynccontextmanager
    async def _driver(self) -> AsyncIterator[Any]:
        """The driver's own connection (asyncpg / aiosqlite) of a pooled connection, for the hot path.

        Checked out of the engine's pool like any other (pre-ping included on
        Postgres) and returned to it afterwards, but nothing is begun through
        SQLAlchemy: the caller runs a self-contained transaction. After a
        failure that may have left the driver mid-protocol (a lost connection,
        a cancelled asyncpg query) the connection is invalidated rather than
        pooled again, as SQLAlchemy does for its own statements.
        """
        fairy = await self._engine.raw_connection()
        try:
            yield fairy.driver_connection
        except BaseException as exc:
            if not self._reusable_after(exc):
                fairy.invalidate()
            raise
        finally:
            if self._sqlite_writer is None:
                # Never suspends: asyncpg has no transaction to roll back on checkin.
                await greenlet_spawn(fairy.close)
            else:
                # The checkin's rollback is a call into aiosqlite's thread; a
                # cancellation must not abandon it halfway.
                await run_to_completion(greenlet_spawn(fairy.close))

    def _reusable_after(self, exc: BaseException) -> bool:
        """Whether a hot-path connection is still fit for the pool after `exc`."""
        if isinstance(exc, asyncpg.PostgresError | sqlite3.Error):
            # The database answered: its statement or transaction was rolled back.
            return True
        # aiosqlite runs a queued function to its end whatever its caller does,
        # and the transaction function always commits or rolls back.
        return self._sqlite_writer is not None and isinstance(exc, asyncio.CancelledError)

    async def _sqlite_transaction(self, body: Callable[..., _T], *args: Any) -> _T:
        """`body(sqlite3_connection, *args)` in one BEGIN IMMEDIATE transaction on the writer's thread.

        aiosqlite runs every call on its connection's thread and wakes the
        event loop once per call; handing it the whole transaction as one
        function pays that (and the pool checkout) once instead of once per
        statement. `_execute` and `_conn` are aiosqlite's own hooks for this
        (stable since 0.17, private by name); the conformance suite exercises
        them on every SQLite write.
        """
        assert self._sqlite_writer is not None
        async with self._sqlite_writer, self._driver() as aio:
            result: _T = await aio._execute(sqlite_in_transaction, aio._conn, body, *args)
        return result

    def _insert_ignoring(self, table: Table, *keys: str) -> Insert:
        """INSERT … ON CONFLICT (keys) DO NOTHING: the first write of a key wins."""
        if self._dialect == "postgresql":
            return postgresql.insert(table).on_conflict_do_nothing(index_elements=list(keys))
        return sqlite.insert(table).on_conflict_do_nothing(index_elements=list(keys))

    # --- threads -----------------------------------------------------------
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
                self._insert_ignoring(t.threads, "thread_id").values(
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

    # --- runs --------------------------------------------------------------
    async def create_run(
        self,
        run_id: str,
        thread_id: str,
        user_id: str,
        request: bytes,
        *,
        owner: str | None = None,
        lease_s: float = DEFAULT_LEASE_S,
        request_id: str | None = None,
    ) -> RunRow:
        """Raises NotFound for an unknown thread, FailedPrecondition for a duplicate run_id.

        With `owner` the run is inserted RUNNING under that owner, or not at all
        (ThreadBusy) when the thread already has a RUNNING run.
        """
        now = utc_now()
        started = owner is not None
        key = thread_key(user_id, thread_id)
        try:
            async with self._write() as conn:
                # Touching the thread also keeps prune() from deleting it
                # between this run's creation and its start.
                touched = await conn.execute(
                    update(t.threads).where(t.threads.c.thread_id == key).values(updated_at=now)
                )
                if touched.rowcount == 0:
                    raise NotFound(f"thread {thread_id} not found")
                row = (
                    (
                        await conn.execute(
                            t.runs.insert()
                            .values(
                                run_id=run_id,
                                thread_id=key,
                                user_id=user_id,
                                status=RUNNING if started else QUEUED,
                                request=request,
                                owner=owner,
                                lease_expires_at=now + timedelta(seconds=lease_s) if started else None,
                                cancel_requested=False,
                                checkpoint_count=0,
                                last_sequence=0,
                                sequence_reserved=0,
                                created_at=now,
                                updated_at=now,
                                request_id=request_id,
                            )
                            .returning(*t.runs.c)
                        )
                    )
                    .mappings()
                    .one()
                )
        except IntegrityError:
            # The user's request id, the primary key, or (started) the one-RUNNING-run-per-thread index.
            if request_id is not None and (replayed := await self.run_by_request(user_id, request_id)):
                raise RequestReplayed(replayed.run_id) from None
            if not started or await self.get_run(run_id) is not None:
                raise FailedPrecondition(f"run {run_id} already exists") from None
            raise ThreadBusy(f"thread {thread_id} already has a running run") from None
        return run_row(row)

    async def start_run(self, run_id: str, owner: str, lease_s: float, reserve: int = 0) -> RunRow:
        """Raises NotFound for an unknown run and FailedPrecondition for one that is not QUEUED."""
        now = utc_now()
        try:
            async with self._write() as conn:
                row = (
                    (
                        await conn.execute(
                            update(t.runs)
                            .where(t.runs.c.run_id == run_id, t.runs.c.status == QUEUED)
                            .values(
                                status=RUNNING,
                                owner=owner,
                                lease_expires_at=now + timedelta(seconds=lease_s),
                                sequence_reserved=greatest(t.runs.c.sequence_reserved, reserve),
                                updated_at=now,
                            )
                            .returning(*t.runs.c)
                        )
                    )
                    .mappings()
                    .one_or_none()
                )
                if row is None:
                    status = (
                        await conn.execute(select(t.runs.c.status).where(t.runs.c.run_id == run_id))
                    ).scalar_one_or_none()
                    if status is None:
                        raise NotFound(f"run {run_id} not found")
                    raise FailedPrecondition(f"run {run_id} is {status}, not queued")
        except IntegrityError:
            # Only the partial unique index on (thread_id) WHERE status =
            # 'running' can fire on this UPDATE.
            raise ThreadBusy(f"the thread of run {run_id} already has a running run") from None
        return run_row(row)

    async def get_run(self, run_id: str) -> RunRow | None:
        async with self._read() as conn:
            row = (
                (await conn.execute(select(t.runs).where(t.runs.c.run_id == run_id))).mappings().one_or_none()
            )
        return None if row is None else run_row(row)

    async def latest_run(self, thread_id: str, *, user_id: str) -> RunRow | None:
        stmt = (
            select(t.runs)
            .where(t.runs.c.thread_id == thread_key(user_id, thread_id))
            .order_by(t.runs.c.created_at.desc(), t.runs.c.run_id.desc())
            .limit(1)
        )
        async with self._read() as conn:
            row = (await conn.execute(stmt)).mappings().one_or_none()
        return None if row is None else run_row(row)

    async def mark_resumed(self, run_id: str, request_id: str, after_sequence: int) -> None:
        async with self._write() as conn:
            await conn.execute(
                update(t.runs)
                .where(t.runs.c.run_id == run_id)
                .values(resume_request_id=request_id, resume_sequence=after_sequence)
            )

    async def run_by_request(self, user_id: str, request_id: str) -> RunRow | None:
        stmt = select(t.runs).where(t.runs.c.user_id == user_id, t.runs.c.request_id == request_id)
        async with self._read() as conn:
            row = (await conn.execute(stmt)).mappings().one_or_none()
        return None if row is None else run_row(row)

    async def list_runs(self, thread_id: str, limit: int, offset: int = 0, *, user_id: str) -> list[RunRow]:
        stmt = (
            select(t.runs)
            .where(t.runs.c.thread_id == thread_key(user_id, thread_id))
            .order_by(t.runs.c.created_at.desc(), t.runs.c.run_id.desc())
            .offset(offset)
            .limit(limit)
        )
        async with self._read() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [run_row(row) for row in rows]

    async def fork_thread(self, thread_id: str, new_thread_id: str, upto: int, *, user_id: str) -> ThreadRow:
        now = utc_now()
        source, key = thread_key(user_id, thread_id), thread_key(user_id, new_thread_id)
        threads, messages = t.threads, t.messages
        try:
            async with self._write() as conn:
                found = await conn.execute(select(threads.c.thread_id).where(threads.c.thread_id == source))
                if found.first() is None:
                    raise NotFound(f"thread {thread_id} not found")
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
                count = select(func.count()).where(messages.c.thread_id == key).scalar_subquery()
                await conn.execute(
                    update(threads).where(threads.c.thread_id == key).values(message_count=count)
                )
                row = (await conn.execute(select(threads).where(threads.c.thread_id == key))).mappings().one()
        except IntegrityError:
            raise AlreadyExists(f"thread {new_thread_id} already exists") from None
        return thread_row(row)

    async def list_threads(self, user_id: str, limit: int, offset: int = 0) -> list[ThreadRow]:
        stmt = (
            select(t.threads)
            .where(t.threads.c.user_id == user_id)
            .order_by(t.threads.c.updated_at.desc(), t.threads.c.thread_id.desc())
            .offset(offset)
            .limit(limit)
        )
        async with self._read() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [thread_row(row) for row in rows]

    async def write_checkpoint(self, write: CheckpointWrite) -> RunRow:
        """One node transition: the run's counters and lease, the thread's messages, the record, the events.

        The hottest write of a run, so it skips SQLAlchemy's statement
        machinery (see `gateway.store.hotpath`): Postgres gets it as one
        statement, one round trip; SQLite as one call into the connection's
        thread. The ownership check comes first and locks the run row, so a
        concurrent claim either happened before (nothing written: LeaseLost)
        or waits for this commit.
        """
        now = utc_now()
        record = write.record.SerializeToString()
        message_data = [m.SerializeToString() for m in write.new_messages]
        events = write.events
        last_sequence = write.record.last_sequence
        for e in events:
            if e.sequence > last_sequence:
                last_sequence = e.sequence
        # The run is RUNNING under write.owner or nothing is written, so
        # "unchanged" can be spelled with the values the WHERE clause checks:
        # one fixed statement whatever `write.status` is.
        status: str = RUNNING
        owner: str | None = write.owner
        lease_expires_at: datetime | None = now + timedelta(seconds=self.lease_s)
        if write.status is not None:
            status = write.status.value
            if write.status.ended:
                owner, lease_expires_at = None, None
        delta_bytes = len(record) + sum(map(len, message_data))
        if self._sqlite_writer is None:
            async with self._driver() as pg:
                row = await pg.fetchrow(
                    PG_WRITE_CHECKPOINT,
                    write.run_id,
                    write.owner,
                    last_sequence,
                    status,
                    owner,
                    lease_expires_at,
                    now,
                    message_data,
                    record,
                    delta_bytes,
                    [e.sequence for e in events],
                    [e.SerializeToString() for e in events],
                    write.sequence_reserved,
                )
            if row is None:
                raise LeaseLost(f"run {write.run_id} is not running under owner {write.owner}")
            return run_row(row)
        stamp = sqlite_text(now)
        values = await self._sqlite_transaction(
            sqlite_write_checkpoint,
            (
                last_sequence,
                status,
                owner,
                None if lease_expires_at is None else sqlite_text(lease_expires_at),
                stamp,
                write.run_id,
                write.owner,
                write.sequence_reserved,
            ),
            stamp,
            write.run_id,
            message_data,
            (record, delta_bytes, stamp),
            [(write.run_id, e.sequence, e.SerializeToString()) for e in events],
        )
        if values is None:
            raise LeaseLost(f"run {write.run_id} is not running under owner {write.owner}")
        return sqlite_run_row(values)

    async def _insert_events(
        self, conn: AsyncConnection, run_id: str, events: Sequence[agent_pb2.RunEvent]
    ) -> None:
        if not events:
            return
        # A re-sent sequence (a resumed run replaying its tail) keeps the first copy.
        await conn.execute(
            self._insert_ignoring(t.run_events, "run_id", "sequence"),
            [{"run_id": run_id, "sequence": e.sequence, "data": e.SerializeToString()} for e in events],
        )

    async def record_tool_result(self, run_id: str, owner: str, result: common_pb2.ToolResult) -> None:
        """A batch of one: a caller recording each call as it finishes pays one transaction per call."""
        await self.record_tool_results(run_id, owner, (result,))

    async def record_tool_results(
        self, run_id: str, owner: str, results: Sequence[common_pb2.ToolResult]
    ) -> None:
        """The lease renewal and every insert in one transaction, on the hot path like `write_checkpoint`.

        One statement (one round trip) on Postgres, one call into the
        connection's thread on SQLite, whatever the batch size: a step's
        parallel calls cost about what one call does. The call id column, the
        first-write-wins key, holds the id's storable form (a model may emit
        NUL, which Postgres text refuses); the result itself keeps the id as is.
        """
        if not results:
            return
        now = utc_now()
        if self._sqlite_writer is None:
            async with self._driver() as pg:
                owned = await pg.fetchval(
                    PG_RECORD_TOOL_RESULTS,
                    run_id,
                    owner,
                    now + timedelta(seconds=self.lease_s),
                    now,
                    [storable(r.tool_call_id) for r in results],
                    [r.SerializeToString() for r in results],
                )
        else:
            owned = await self._sqlite_transaction(
                sqlite_record_tool_results,
                (sqlite_text(now + timedelta(seconds=self.lease_s)), sqlite_text(now), run_id, owner),
                [(run_id, storable(r.tool_call_id), r.SerializeToString()) for r in results],
            )
        if not owned:
            raise LeaseLost(f"run {run_id} is not running under owner {owner}")

    async def tool_results(self, run_id: str) -> dict[str, common_pb2.ToolResult]:
        stmt = (
            select(t.tool_results.c.data)
            .where(t.tool_results.c.run_id == run_id)
            .order_by(t.tool_results.c.position)
        )
        async with self._read() as conn:
            rows = (await conn.execute(stmt)).scalars().all()
        # Keyed by the id inside the result, not the column: the column holds
        # its storable form (see record_tool_results).
        results = [common_pb2.ToolResult.FromString(data) for data in rows]
        return {r.tool_call_id: r for r in results}

    async def request_cancel(self, run_id: str) -> RunRow:
        """Raises NotFound for an unknown run."""
        now = utc_now()
        runs = t.runs.c
        # No live owner will ever read cancel_requested, so end the run here.
        at_once = or_(runs.status == QUEUED, and_(runs.status == RUNNING, expired(now)))
        stmt = (
            update(t.runs)
            .where(runs.run_id == run_id)
            .values(
                cancel_requested=True,
                updated_at=now,
                status=case((at_once, literal(CANCELLED)), else_=runs.status),
                owner=case((at_once, null()), else_=runs.owner),
                lease_expires_at=case((at_once, null()), else_=runs.lease_expires_at),
            )
            .returning(*t.runs.c)
        )
        async with self._write() as conn:
            row = (await conn.execute(stmt)).mappings().one_or_none()
        if row is None:
            raise NotFound(f"run {run_id} not found")
        return run_row(row)

    async def set_status(self, run_id: str, status: RunStatus) -> RunRow:
        """Raises NotFound for an unknown run (ThreadBusy when forcing RUNNING onto a busy thread)."""
        now = utc_now()
        values: dict[str, Any] = {"status": status.value, "updated_at": now}
        if status.ended:
            values["owner"] = None
            values["lease_expires_at"] = None
        try:
            async with self._write() as conn:
                row = (
                    (
                        await conn.execute(
                            update(t.runs)
                            .where(t.runs.c.run_id == run_id)
                            .values(values)
                            .returning(*t.runs.c)
                        )
                    )
                    .mappings()
                    .one_or_none()
                )
        except IntegrityError:
            raise ThreadBusy(f"the thread of run {run_id} already has a running run") from None
        if row is None:
            raise NotFound(f"run {run_id} not found")
        return run_row(row)

    # --- ownership ---------------------------------------------------------
    async def heartbeat(self, owner: str, lease_s: float, run_ids: Sequence[str]) -> int:
        if not run_ids:
            return 0
        now = utc_now()
        runs = t.runs.c
        async with self._write() as conn:
            result = await conn.execute(
                update(t.runs)
                .where(runs.run_id.in_(list(run_ids)), runs.owner == owner, runs.status == RUNNING)
                .values(lease_expires_at=now + timedelta(seconds=lease_s))
            )
        return result.rowcount

    async def claim_paused(self, run_id: str, owner: str, lease_s: float) -> bool:
        now = utc_now()
        runs = t.runs.c
        try:
            async with self._write() as conn:
                result = await conn.execute(
                    update(t.runs)
                    .where(runs.run_id == run_id, runs.status == RunStatus.PAUSED.value)
                    .values(
                        status=RUNNING,
                        owner=owner,
                        lease_expires_at=now + timedelta(seconds=lease_s),
                        updated_at=now,
                    )
                )
        except IntegrityError:
            raise ThreadBusy(f"the thread of run {run_id} already has a running run") from None
        return result.rowcount == 1

    async def reserve_sequences(self, run_id: str, owner: str, upto: int) -> None:
        runs = t.runs.c
        async with self._write() as conn:
            result = await conn.execute(
                update(t.runs)
                .where(runs.run_id == run_id, runs.owner == owner, runs.status == RUNNING)
                .values(sequence_reserved=greatest(runs.sequence_reserved, upto))
            )
        if result.rowcount != 1:
            raise LeaseLost(f"run {run_id} is not running under owner {owner}")

    async def claim_run(self, run_id: str, owner: str, lease_s: float) -> bool:
        now = utc_now()
        runs = t.runs.c
        async with self._write() as conn:
            result = await conn.execute(
                update(t.runs)
                .where(
                    runs.run_id == run_id,
                    runs.status == RUNNING,
                    or_(runs.owner == owner, runs.owner.is_(None), expired(now)),
                )
                .values(owner=owner, lease_expires_at=now + timedelta(seconds=lease_s))
            )
        return result.rowcount == 1

    async def claim_orphans(self, owner: str, lease_s: float, limit: int) -> list[str]:
        if limit <= 0:
            return []
        now = utc_now()
        expires = now + timedelta(seconds=lease_s)
        runs = t.runs.c
        orphan = and_(runs.status == RUNNING, expired(now))
        # An alias, or SQLAlchemy would correlate the subquery to the UPDATE's
        # own table and the LIMIT would apply per row.
        inner = t.runs.alias("candidate")
        candidates = (
            select(inner.c.run_id)
            .where(inner.c.status == RUNNING, expired(now, inner))
            .order_by(inner.c.updated_at)
            .limit(limit)
        )
        async with self._write() as conn:
            if self._dialect == "postgresql":
                # SKIP LOCKED: concurrent claimers take disjoint rows instead
                # of queueing behind each other; the outer WHERE re-checks
                # each row. A MATERIALIZED CTE runs once, where an IN
                # (subquery) may be rescanned per row and go past the LIMIT.
                locked = (
                    candidates.with_for_update(skip_locked=True)
                    .cte("candidates")
                    .prefix_with("MATERIALIZED", dialect="postgresql")
                )
                result = await conn.execute(
                    update(t.runs)
                    .where(runs.run_id == locked.c.run_id, orphan)
                    .values(owner=owner, lease_expires_at=expires)
                    .returning(runs.run_id)
                )
                return list(result.scalars().all())
            claimed: list[str] = []
            for run_id in (await conn.execute(candidates)).scalars().all():
                taken = await conn.execute(
                    update(t.runs)
                    .where(runs.run_id == run_id, orphan)
                    .values(owner=owner, lease_expires_at=expires)
                )
                if taken.rowcount == 1:
                    claimed.append(run_id)
            return claimed

    async def release(self, owner: str) -> int:
        now = utc_now()
        async with self._write() as conn:
            result = await conn.execute(
                update(t.runs)
                .where(t.runs.c.owner == owner, t.runs.c.status == RUNNING)
                .values(lease_expires_at=now)
            )
        return result.rowcount

    # --- history -------------------------------------------------------------
    async def latest_checkpoint(self, run_id: str) -> CheckpointRow | None:
        stmt = (
            select(t.checkpoints)
            .where(t.checkpoints.c.run_id == run_id)
            .order_by(t.checkpoints.c.idx.desc())
            .limit(1)
        )
        async with self._read() as conn:
            row = (await conn.execute(stmt)).mappings().one_or_none()
        return None if row is None else checkpoint_row(row)

    async def get_checkpoint(self, run_id: str, index: int) -> CheckpointRow | None:
        stmt = select(t.checkpoints).where(t.checkpoints.c.run_id == run_id, t.checkpoints.c.idx == index)
        async with self._read() as conn:
            row = (await conn.execute(stmt)).mappings().one_or_none()
        return None if row is None else checkpoint_row(row)

    async def list_checkpoints(
        self, thread_id: str, run_id: str | None, after_position: int, limit: int, *, user_id: str
    ) -> list[CheckpointRow]:
        cps = t.checkpoints.c
        stmt = (
            select(t.checkpoints)
            .where(cps.thread_id == thread_key(user_id, thread_id), cps.position > after_position)
            .order_by(cps.position)
            .limit(limit)
        )
        if run_id is not None:
            stmt = stmt.where(cps.run_id == run_id)
        async with self._read() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [checkpoint_row(row) for row in rows]

    async def events(self, run_id: str, after_sequence: int, limit: int = 1000) -> list[agent_pb2.RunEvent]:
        ev = t.run_events.c
        stmt = (
            select(ev.data)
            .where(ev.run_id == run_id, ev.sequence > after_sequence)
            .order_by(ev.sequence)
            .limit(limit)
        )
        async with self._read() as conn:
            rows = (await conn.execute(stmt)).scalars().all()
        return [stored_event(data) for data in rows]

    async def append_events(self, run_id: str, events: Sequence[agent_pb2.RunEvent]) -> None:
        """Raises NotFound for an unknown run; keeps the run's last_sequence in step."""
        if not events:
            return
        async with self._write() as conn:
            touched = await conn.execute(
                update(t.runs)
                .where(t.runs.c.run_id == run_id)
                .values(last_sequence=greatest(t.runs.c.last_sequence, max(e.sequence for e in events)))
            )
            if touched.rowcount == 0:
                raise NotFound(f"run {run_id} not found")
            await self._insert_events(conn, run_id, events)

    # --- retention and accounting -----------------------------------------
    async def prune(self, keep_last: int, idle_ttl_s: float | None) -> PruneStats:
        keep = max(1, keep_last)
        now = utc_now()
        # Checkpoint indexes are 1..checkpoint_count without gaps (pruning
        # only removes the oldest), so "older than the newest `keep`" is a
        # comparison with the run's counter, not a window function.
        newest = (
            select(t.runs.c.checkpoint_count)
            .where(t.runs.c.run_id == t.checkpoints.c.run_id)
            .scalar_subquery()
        )
        async with self._write() as conn:
            pruned = await conn.execute(delete(t.checkpoints).where(t.checkpoints.c.idx <= newest - keep))
            threads_deleted = 0
            if idle_ttl_s is not None:
                active = (
                    select(t.runs.c.run_id)
                    .where(
                        t.runs.c.thread_id == t.threads.c.thread_id,
                        t.runs.c.status.in_(t.UNENDED_STATUSES),
                    )
                    .exists()
                )
                # ON DELETE CASCADE removes runs, messages, checkpoints, tool
                # results and events (SQLite too: foreign_keys=ON per connection).
                gone = await conn.execute(
                    delete(t.threads).where(
                        t.threads.c.updated_at < now - timedelta(seconds=idle_ttl_s), ~active
                    )
                )
                threads_deleted = gone.rowcount
        return PruneStats(checkpoints_deleted=pruned.rowcount, threads_deleted=threads_deleted)

    async def storage(self, run_id: str) -> StorageStats:
        def total(column: Any, run_column: Any) -> Any:
            return (
                select(func.coalesce(func.sum(func.length(column)), 0))
                .where(run_column == run_id)
                .scalar_subquery()
            )

        sums = select(
            total(t.checkpoints.c.record, t.checkpoints.c.run_id),
            total(t.messages.c.data, t.messages.c.run_id),
            total(t.run_events.c.data, t.run_events.c.run_id),
            total(t.tool_results.c.data, t.tool_results.c.run_id),
        )
        deltas = (
            select(t.checkpoints.c.delta_bytes)
            .where(t.checkpoints.c.run_id == run_id)
            .order_by(t.checkpoints.c.idx)
        )
        async with self._read() as conn:
            checkpoint_bytes, message_bytes, event_bytes, tool_bytes = (await conn.execute(sums)).one()
            by_checkpoint = list((await conn.execute(deltas)).scalars().all())
        return StorageStats(
            checkpoint_bytes=int(checkpoint_bytes),
            message_bytes=int(message_bytes),
            event_bytes=int(event_bytes),
            tool_result_bytes=int(tool_bytes),
            by_checkpoint=by_checkpoint,
        )

    async def close(self) -> None:
        await self._engine.dispose()
