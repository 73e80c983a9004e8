"""What differs between the two databases `SqlStore` runs on, one class per backend.

The store's methods are written once; where Postgres and SQLite must do a
thing differently they ask their `Dialect`:

- Write transactions. SQLite: every write transaction starts with `BEGIN
  IMMEDIATE`. A deferred transaction that reads and then writes cannot wait
  for the write lock in WAL mode (it fails with SQLITE_BUSY at once); taking
  the lock up front lets `busy_timeout` queue writers instead. Within one
  process, writers to a SQLite file also queue on an asyncio lock first:
  SQLite admits one writer at a time anyway, and its busy handler polls with
  growing sleeps, so fifty concurrent runs polling the file lock would starve
  some past the timeout. Postgres writers never share a lock.
- Cancellation. On SQLite a cancelled caller never cuts a statement short
  inside SQLAlchemy: each step of a read or write runs to its end and the
  caller is cancelled between steps (`_connection_run_to_completion`). On
  Postgres SQLAlchemy's own handling stands: a cancelled statement
  invalidates its connection, and closing it ends the transaction server-side.
- The write hot path (`gateway.store.hotpath`): one statement through asyncpg,
  or one function on aiosqlite's thread, and what a cancellation leaves of it.
- Statements only one backend has: `FOR UPDATE SKIP LOCKED` to claim orphans
  without queueing, each dialect's own `INSERT … ON CONFLICT DO NOTHING`.
- LISTEN/NOTIFY, which only Postgres offers to gateways sharing a database.
"""

from __future__ import annotations

import abc
import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import datetime
from typing import Any, TypeVar, cast

import asyncpg
from sqlalchemy import ColumnElement, Select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import CursorResult
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.sql.base import Executable
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.schema import Table
from sqlalchemy.util import greenlet_spawn

from gateway.store import tables as t
from gateway.store.base import RunRow
from gateway.store.engine import BEGIN_OPTION, mark_stale
from gateway.store.errors import is_connection_error
from gateway.store.hotpath import (
    PG_RECORD_TOOL_RESULTS,
    PG_WRITE_CHECKPOINT,
    StepWrite,
    run_to_completion,
    sqlite_in_one_transaction,
    sqlite_in_transaction,
    sqlite_record_tool_results,
    sqlite_write_checkpoint,
)
from gateway.store.notify import asyncpg_dsn
from gateway.store.rows import run_row, sqlite_run_row, sqlite_text

_T = TypeVar("_T")
_QueuedWrite = tuple[Callable[..., Any], tuple[Any, ...], "asyncio.Future[Any]"]
"""A write waiting for the SQLite writer: its body, the body's arguments, where its outcome goes."""


def _retrieve(outcome: asyncio.Future[Any]) -> None:
    """Mark a write's outcome as seen when its caller is gone (no "never retrieved" warning)."""
    if not outcome.cancelled():
        outcome.exception()


class _StatementsRunToCompletion:
    """An SQLite connection whose statements finish even if their caller is cancelled.

    What `SqliteDialect.read` and `write` hand to the store's bodies in place
    of the AsyncConnection itself; those bodies only `execute`.
    """

    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn

    async def execute(self, statement: Executable, parameters: Any = None) -> CursorResult[Any]:
        return await run_to_completion(self._conn.execute(statement, parameters))


@asynccontextmanager
async def _connection_run_to_completion(
    connectable: AsyncEngine, *, begin: bool
) -> AsyncIterator[AsyncConnection]:
    """An SQLite connection that a cancellation never cuts short inside SQLAlchemy.

    Each step (checkout, BEGIN, every statement, COMMIT or ROLLBACK, checkin)
    runs to its end in a task of its own; a caller cancelled meanwhile gets
    its CancelledError between two steps, and what it began is then rolled
    back, again to its end, before the connection goes back to the pool.

    Left to itself, SQLAlchemy takes a cancelled statement for a lost
    connection: it invalidates the connection and closes it from the event
    loop while aiosqlite's thread is still running the statement, and a
    second cancellation during that close makes it stop the thread outright
    (`AsyncAdapt_terminate`). Clients leaving by the hundred during setup
    (each a cancelled `create_run`) drove writes into that path: a
    connection so closed can keep the file's write lock with nobody owning
    it (every writer then failed with "database is locked"), and the
    engine's `dispose()` could hang for ever on the stopped thread.
    """
    conn = connectable.connect()
    try:
        await run_to_completion(conn.start())
    except BaseException:
        if conn.sync_connection is not None:  # checked out, then its caller was cancelled
            await run_to_completion(conn.close())
        raise
    try:
        if begin:
            await run_to_completion(conn.begin().start())
        yield cast(AsyncConnection, _StatementsRunToCompletion(conn))
        if begin:
            await run_to_completion(conn.commit())
    except BaseException:
        await run_to_completion(conn.rollback())
        raise
    finally:
        await run_to_completion(conn.close())  # a read's transaction is rolled back here


class Dialect(abc.ABC):
    """One backend's way of doing what the store's methods need done differently."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self._writer = engine.execution_options(**{BEGIN_OPTION: "IMMEDIATE"})

    @abc.abstractmethod
    def write(self) -> AbstractAsyncContextManager[AsyncConnection]:
        """A transaction that will write: commits on success, rolls back on any exception."""

    def read(self) -> AbstractAsyncContextManager[AsyncConnection]:
        """A connection for reads: a plain (deferred) transaction, rolled back on exit."""
        return self.engine.connect()

    @asynccontextmanager
    async def driver(self) -> AsyncIterator[Any]:
        """The driver's own connection (asyncpg / aiosqlite) of a pooled connection, for the hot path.

        Checked out of the engine's pool like any other (pinged first when it sat idle, on
        Postgres) and returned to it afterwards, but nothing is begun through
        SQLAlchemy: the caller runs a self-contained transaction. After a
        failure that may have left the driver mid-protocol (a lost connection,
        a cancelled asyncpg query) the connection is invalidated rather than
        pooled again, as SQLAlchemy does for its own statements; a connection
        the server dropped (an error of the connection class, such as
        AdminShutdownError, which the server sends as it restarts) is too,
        and the pool's others are pinged before their next use.
        """
        fairy = await self.engine.raw_connection()
        try:
            yield fairy.driver_connection
        except BaseException as exc:
            if is_connection_error(exc):
                # Dead with the server (a restart): so may be the rest of the pool.
                fairy.invalidate()
                mark_stale(self.engine)
            elif not isinstance(exc, asyncpg.PostgresError | sqlite3.Error) and not self._survives(exc):
                fairy.invalidate()
            raise
        finally:
            await self._check_in(fairy)

    def _survives(self, exc: BaseException) -> bool:
        """Whether a hot-path connection is fit for the pool after `exc`, which the database did not raise.

        (After an error the database raised, its statement or transaction was
        rolled back, so the connection always is.)
        """
        return False

    @abc.abstractmethod
    async def _check_in(self, fairy: Any) -> None:
        """Give a `driver` connection back to the pool."""

    @abc.abstractmethod
    def insert_ignoring(self, table: Table, *keys: str) -> Insert:
        """INSERT … ON CONFLICT (keys) DO NOTHING: the first write of a key wins."""

    @abc.abstractmethod
    async def claim_orphans(
        self,
        conn: AsyncConnection,
        candidates: Select[str],
        orphan: ColumnElement[bool],
        owner: str,
        expires: datetime,
    ) -> list[str]:
        """Give `owner` those of the `candidates` that are still `orphan`s, each to exactly one claimer."""

    @abc.abstractmethod
    async def write_step(self, step: StepWrite) -> RunRow | None:
        """write_checkpoint's one transaction; the updated run, or None (nothing written) if not owned."""

    @abc.abstractmethod
    async def record_tool_results(
        self,
        run_id: str,
        owner: str,
        lease_expires_at: datetime,
        now: datetime,
        results: list[tuple[str, bytes]],
    ) -> bool:
        """Renew the lease and insert (tool call id, result) pairs in one transaction; False if not owned."""

    @property
    @abc.abstractmethod
    def live_dsn(self) -> str | None:
        """See `Store.live_dsn`."""


class PostgresDialect(Dialect):
    """Postgres through asyncpg: writers run in parallel, row locks decide between them."""

    def __init__(self, engine: AsyncEngine) -> None:
        super().__init__(engine)
        self._reader = engine.execution_options(isolation_level="AUTOCOMMIT")

    def read(self) -> AbstractAsyncContextManager[AsyncConnection]:
        """Reads outside any transaction: no BEGIN and ROLLBACK around them (two round trips each).

        Nothing is lost: at Postgres's READ COMMITTED every statement takes
        its own snapshot even inside a transaction, so a read transaction
        never made several statements see one state.
        """
        return self._reader.connect()

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncConnection]:
        async with self._writer.begin() as conn:
            yield conn

    async def _check_in(self, fairy: Any) -> None:
        # Never suspends: asyncpg has no transaction to roll back on checkin.
        await greenlet_spawn(fairy.close)

    def insert_ignoring(self, table: Table, *keys: str) -> Insert:
        return postgresql.insert(table).on_conflict_do_nothing(index_elements=list(keys))

    async def claim_orphans(
        self,
        conn: AsyncConnection,
        candidates: Select[str],
        orphan: ColumnElement[bool],
        owner: str,
        expires: datetime,
    ) -> list[str]:
        # SKIP LOCKED: concurrent claimers take disjoint rows instead of
        # queueing behind each other; the outer WHERE re-checks each row. A
        # MATERIALIZED CTE runs once, where an IN (subquery) may be rescanned
        # per row and go past the LIMIT.
        locked = (
            candidates.with_for_update(skip_locked=True)
            .cte("candidates")
            .prefix_with("MATERIALIZED", dialect="postgresql")
        )
        runs = t.runs.c
        result = await conn.execute(
            update(t.runs)
            .where(runs.run_id == locked.c.run_id, orphan)
            .values(owner=owner, lease_expires_at=expires)
            .returning(runs.run_id)
        )
        return list(result.scalars().all())

    async def write_step(self, step: StepWrite) -> RunRow | None:
        async with self.driver() as pg:
            row = await pg.fetchrow(
                PG_WRITE_CHECKPOINT,
                step.run_id,
                step.owner,
                step.last_sequence,
                step.status,
                step.new_owner,
                step.lease_expires_at,
                step.now,
                step.messages,
                step.record,
                step.delta_bytes,
                [sequence for sequence, _ in step.events],
                [data for _, data in step.events],
                step.sequence_reserved,
                [call_id for call_id, _ in step.tool_results],
                [data for _, data in step.tool_results],
                step.index,
            )
        return None if row is None else run_row(row)

    async def record_tool_results(
        self,
        run_id: str,
        owner: str,
        lease_expires_at: datetime,
        now: datetime,
        results: list[tuple[str, bytes]],
    ) -> bool:
        async with self.driver() as pg:
            owned = await pg.fetchval(
                PG_RECORD_TOOL_RESULTS,
                run_id,
                owner,
                lease_expires_at,
                now,
                [call_id for call_id, _ in results],
                [data for _, data in results],
            )
        return bool(owned)

    @property
    def live_dsn(self) -> str | None:
        return asyncpg_dsn(self.engine.url.render_as_string(hide_password=False))


class SqliteDialect(Dialect):
    """An SQLite file through aiosqlite: one writer at a time, queued in this process first."""

    def __init__(self, engine: AsyncEngine) -> None:
        super().__init__(engine)
        self._lock = asyncio.Lock()
        self._queued: list[_QueuedWrite] = []

    def read(self) -> AbstractAsyncContextManager[AsyncConnection]:
        return _connection_run_to_completion(self.engine, begin=False)

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncConnection]:
        async with self._lock, _connection_run_to_completion(self._writer, begin=True) as conn:
            yield conn

    def _survives(self, exc: BaseException) -> bool:
        # aiosqlite runs a queued function to its end whatever its caller does,
        # and the transaction function always commits or rolls back.
        return isinstance(exc, asyncio.CancelledError)

    async def _check_in(self, fairy: Any) -> None:
        # The checkin's rollback is a call into aiosqlite's thread; a
        # cancellation must not abandon it halfway.
        await run_to_completion(greenlet_spawn(fairy.close))

    async def _transaction(self, body: Callable[..., _T], *args: Any) -> _T:
        """`body(sqlite3_connection, *args)` in a BEGIN IMMEDIATE transaction on a writer's thread.

        aiosqlite runs every call on its connection's thread and wakes the
        event loop once per call; handing it the whole transaction as one
        function pays that (and the pool checkout) once instead of once per
        statement. `_execute` and `_conn` are aiosqlite's own hooks for this
        (stable since 0.17, private by name); the conformance suite exercises
        them on every SQLite write.

        Group commit: the writes that queue while one is under way go to the
        thread together, as one transaction with a savepoint each
        (`sqlite_in_one_transaction`), and each caller gets its own outcome
        once that transaction has committed. With many runs in flight the
        writer queue was the bottleneck: each write held the file's lock for
        two trips between the event loop and the thread (200 runs in flight
        spent ~75 ms per checkpoint write waiting for it), where a batch pays
        them once.
        """
        done: asyncio.Future[_T] = asyncio.get_running_loop().create_future()
        queued = (body, args, done)
        self._queued.append(queued)
        try:
            async with self._lock:
                if not done.done():
                    batch, self._queued = self._queued, []
                    # Its own task, awaited to its end even if this caller is
                    # cancelled: the other writers of the batch wait for their
                    # outcomes, and the lock is held until the transaction has
                    # ended on the thread (a writer that let go at once would
                    # leave it running beside the next one's).
                    await run_to_completion(self._write_together(batch))
        except asyncio.CancelledError:
            if queued in self._queued:  # not taken by a batch yet: it never runs
                self._queued.remove(queued)
            else:  # its outcome comes to nobody
                done.add_done_callback(_retrieve)
            raise
        return done.result()

    async def _write_together(self, batch: list[_QueuedWrite]) -> None:
        """One thread call for the whole batch; its outcomes handed to each waiting writer."""
        try:
            async with self.driver() as aio:
                if len(batch) == 1:
                    body, args, _ = batch[0]
                    single = await aio._execute(sqlite_in_transaction, aio._conn, body, *args)
                    outcomes: list[tuple[bool, Any]] = [(True, single)]
                else:
                    writes = [(body, args) for body, args, _ in batch]
                    outcomes = await aio._execute(sqlite_in_one_transaction, aio._conn, writes)
        except Exception as exc:  # the whole transaction failed: every writer retries or reports it
            outcomes = [(False, exc)] * len(batch)
        except BaseException:
            for _, _, waiting in batch:
                waiting.cancel()
            raise
        for (_, _, waiting), (ok, value) in zip(batch, outcomes, strict=True):
            if not waiting.done():
                if ok:
                    waiting.set_result(value)
                else:
                    waiting.set_exception(value)

    def insert_ignoring(self, table: Table, *keys: str) -> Insert:
        return sqlite.insert(table).on_conflict_do_nothing(index_elements=list(keys))

    async def claim_orphans(
        self,
        conn: AsyncConnection,
        candidates: Select[str],
        orphan: ColumnElement[bool],
        owner: str,
        expires: datetime,
    ) -> list[str]:
        # The write transaction holds the file's only write lock: a
        # compare-and-set per candidate cannot race another claimer.
        claimed: list[str] = []
        for run_id in (await conn.execute(candidates)).scalars().all():
            taken = await conn.execute(
                update(t.runs)
                .where(t.runs.c.run_id == run_id, orphan)
                .values(owner=owner, lease_expires_at=expires)
            )
            if taken.rowcount == 1:
                claimed.append(run_id)
        return claimed

    async def write_step(self, step: StepWrite) -> RunRow | None:
        stamp = sqlite_text(step.now)
        values = await self._transaction(
            sqlite_write_checkpoint,
            (
                step.last_sequence,
                step.status,
                step.new_owner,
                None if step.lease_expires_at is None else sqlite_text(step.lease_expires_at),
                stamp,
                step.run_id,
                step.owner,
                step.sequence_reserved,
                step.index,
            ),
            stamp,
            step.run_id,
            step.messages,
            (step.record, step.delta_bytes, stamp),
            [(step.run_id, sequence, data) for sequence, data in step.events],
            [(step.run_id, call_id, data) for call_id, data in step.tool_results],
        )
        return None if values is None else sqlite_run_row(values)

    async def record_tool_results(
        self,
        run_id: str,
        owner: str,
        lease_expires_at: datetime,
        now: datetime,
        results: list[tuple[str, bytes]],
    ) -> bool:
        return await self._transaction(
            sqlite_record_tool_results,
            (sqlite_text(lease_expires_at), sqlite_text(now), run_id, owner),
            [(run_id, call_id, data) for call_id, data in results],
        )

    @property
    def live_dsn(self) -> str | None:
        # One process serves an SQLite file: its runs are followed in memory.
        return None


def dialect_for(engine: AsyncEngine) -> Dialect:
    """The dialect of `engine`'s database (an engine from `gateway.store.engine.make_engine`)."""
    return SqliteDialect(engine) if engine.dialect.name == "sqlite" else PostgresDialect(engine)
