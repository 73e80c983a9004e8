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
for fixed SQL handed to the driver; see "the write hot path" below. Everything
else is SQLAlchemy Core, where clarity is worth more than its per-call cost.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import asyncpg
from sqlalchemy import (
    BigInteger,
    ColumnElement,
    FromClause,
    RowMapping,
    and_,
    case,
    delete,
    event,
    func,
    literal,
    null,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.schema import Table
from sqlalchemy.util import greenlet_spawn

from agentloop.errors import FailedPrecondition, NotFound
from agentloop.v1 import agent_pb2, checkpoint_pb2, common_pb2
from gateway.store import tables as t
from gateway.store.base import (
    CheckpointRow,
    CheckpointWrite,
    LeaseLost,
    PruneStats,
    RunRow,
    RunStatus,
    StorageStats,
    Store,
    ThreadBusy,
    ThreadRow,
)

DEFAULT_LEASE_S = 30.0
SQLITE_BUSY_TIMEOUT_MS = 5000
_BEGIN_OPTION = "agentloop_sqlite_begin"

_RUNNING = RunStatus.RUNNING.value
_QUEUED = RunStatus.QUEUED.value
_CANCELLED = RunStatus.CANCELLED.value

_T = TypeVar("_T")


def to_async_url(url: str) -> str:
    """The same database behind the async driver SqlStore needs (asyncpg / aiosqlite).

    Accepts what people paste from elsewhere: `postgres://`, `postgresql://`,
    `postgresql+psycopg://`, `sqlite:///file`, or a bare file path.
    """
    if "://" not in url:
        return f"sqlite+aiosqlite:///{url}"
    parsed = make_url(url)
    backend = parsed.drivername.split("+", 1)[0]
    if backend in ("postgres", "postgresql"):
        parsed = parsed.set(drivername="postgresql+asyncpg")
    elif backend == "sqlite":
        parsed = parsed.set(drivername="sqlite+aiosqlite")
    else:
        raise ValueError(f"unsupported database URL scheme {parsed.drivername!r}: use postgresql or sqlite")
    return parsed.render_as_string(hide_password=False)


def _sqlite_memory(url: URL) -> bool:
    return url.database in (None, "", ":memory:") or "mode=memory" in str(url)


def make_engine(url: str, *, pool_size: int = 20, max_overflow: int = 10) -> AsyncEngine:
    """An engine configured the way SqlStore relies on (also used by the migrations)."""
    parsed = make_url(to_async_url(url))
    if parsed.get_backend_name() == "sqlite":
        if _sqlite_memory(parsed):
            # Every pooled connection would see its own empty database.
            raise ValueError("SqlStore needs an SQLite file, not an in-memory database")
        engine = create_async_engine(parsed, pool_size=pool_size, max_overflow=max_overflow)
        _configure_sqlite(engine)
        return engine
    return create_async_engine(parsed, pool_size=pool_size, max_overflow=max_overflow, pool_pre_ping=True)


def _configure_sqlite(engine: AsyncEngine) -> None:
    sync_engine = engine.sync_engine

    @event.listens_for(sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take transaction control away from the sqlite3 module (which would
        # BEGIN DEFERRED lazily) so that the "begin" hook below decides.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            # Off by default in SQLite; the ON DELETE CASCADEs depend on it.
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA synchronous=NORMAL")
        finally:
            cursor.close()

    @event.listens_for(sync_engine, "begin")
    def _on_begin(conn: Connection) -> None:
        mode = conn.get_execution_options().get(_BEGIN_OPTION, "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")


def _now() -> datetime:
    # Lease times come from the application's clock on both backends, so a
    # lease means the same whether the database is Postgres or SQLite.
    return datetime.now(UTC)


def _greatest(column: ColumnElement[int], value: int) -> ColumnElement[int]:
    """max(column, value) in SQL both backends share (GREATEST is Postgres-only)."""
    bound = literal(value, BigInteger())
    return case((column > bound, column), else_=bound)


def _expired(now: datetime, runs: FromClause = t.runs) -> ColumnElement[bool]:
    return or_(runs.c.lease_expires_at.is_(None), runs.c.lease_expires_at < now)


def _thread_row(row: RowMapping) -> ThreadRow:
    return ThreadRow(
        thread_id=row["thread_id"],
        user_id=row["user_id"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        message_count=row["message_count"],
    )


def _run_row(row: RowMapping) -> RunRow:
    return RunRow(
        run_id=row["run_id"],
        thread_id=row["thread_id"],
        user_id=row["user_id"],
        status=RunStatus(row["status"]),
        request=bytes(row["request"]),
        owner=row["owner"],
        lease_expires_at=row["lease_expires_at"],
        cancel_requested=bool(row["cancel_requested"]),
        checkpoint_count=row["checkpoint_count"],
        last_sequence=row["last_sequence"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def _checkpoint_row(row: RowMapping) -> CheckpointRow:
    return CheckpointRow(
        run_id=row["run_id"],
        thread_id=row["thread_id"],
        index=row["idx"],
        record=checkpoint_pb2.CheckpointRecord.FromString(row["record"]),
        delta_bytes=row["delta_bytes"],
        created_at=row["created_at"],
        position=row["position"],
    )


# --- the write hot path -----------------------------------------------------
#
# write_checkpoint runs at every node transition and record_tool_results at
# every step with tools, so their cost is per-step gateway CPU. Built with
# SQLAlchemy Core they cost milliseconds per call: statement construction,
# cache-key generation and compilation, result processing, and a greenlet
# switch plus a driver round trip per statement. Instead each is a fixed SQL
# text (nothing to build or compile per call) handed straight to the driver of
# a pooled connection (`SqlStore._driver`):
#
# - Postgres: ONE statement, data-modifying CTEs, so one round trip and an
#   implicit transaction (the connection stays in autocommit: nothing begun
#   through SQLAlchemy). All CTEs see the same snapshot, so positions come from
#   RETURNING values, never from reads; and every insert selects FROM the
#   ownership CTE, so when the run UPDATE matches nothing (LeaseLost) nothing
#   at all is written. asyncpg keeps the statement prepared per connection.
# - SQLite: the whole transaction is one function run on the aiosqlite
#   connection's own thread (one hop instead of one per statement); inside
#   it, statements cost microseconds. Values are stored exactly as the
#   SQLAlchemy types store them (UtcDateTime: naive UTC text with
#   microseconds), so both paths read and compare each other's rows.
#
# What that costs: the SQL spells out `tables`' columns by hand (the
# conformance suite runs every statement on both backends, so drift fails
# there); errors arrive as the driver's own (asyncpg / sqlite3) rather than
# wrapped by SQLAlchemy, which no caller distinguishes; and on SQLite a call
# cancelled after handing its transaction to the thread still completes it,
# where Postgres may roll back, so after a cancellation either outcome is
# possible (as it always was for a cancellation that raced the commit).

_RUN_COLUMNS = (
    "run_id, thread_id, user_id, status, request, owner, lease_expires_at,"
    " cancel_requested, checkpoint_count, last_sequence, created_at, updated_at"
)

_PG_WRITE_CHECKPOINT = f"""
WITH owned AS (
    UPDATE runs
    SET checkpoint_count = checkpoint_count + 1,
        last_sequence = GREATEST(last_sequence, $3::bigint),
        status = $4::text,
        owner = $5::text,
        lease_expires_at = $6::timestamptz,
        updated_at = $7::timestamptz
    WHERE run_id = $1::text AND owner = $2::text AND status = '{_RUNNING}'
    RETURNING {_RUN_COLUMNS}
), thread AS (
    UPDATE threads
    SET message_count = threads.message_count + cardinality($8::bytea[]),
        updated_at = $7::timestamptz
    FROM owned
    WHERE threads.thread_id = owned.thread_id
    RETURNING threads.thread_id, threads.message_count
), new_messages AS (
    INSERT INTO messages (thread_id, idx, run_id, data)
    SELECT thread.thread_id, thread.message_count - cardinality($8::bytea[]) + m.ord - 1, $1::text, m.data
    FROM thread, unnest($8::bytea[]) WITH ORDINALITY AS m(data, ord)
), new_checkpoint AS (
    INSERT INTO checkpoints (run_id, thread_id, idx, record, delta_bytes, created_at)
    SELECT owned.run_id, owned.thread_id, owned.checkpoint_count, $9::bytea, $10::integer, $7::timestamptz
    FROM owned
), new_events AS (
    INSERT INTO run_events (run_id, sequence, data)
    SELECT owned.run_id, e.sequence, e.data
    FROM owned, unnest($11::bigint[], $12::bytea[]) AS e(sequence, data)
    ON CONFLICT (run_id, sequence) DO NOTHING
)
SELECT {_RUN_COLUMNS} FROM owned
"""
"""$1 run_id, $2 owner, $3 last_sequence, $4 status, $5 new owner, $6 lease_expires_at, $7 now,
$8 message data, $9 record, $10 delta_bytes, $11 event sequences, $12 event data."""

_PG_RECORD_TOOL_RESULTS = f"""
WITH owned AS (
    UPDATE runs
    SET lease_expires_at = $3::timestamptz, updated_at = $4::timestamptz
    WHERE run_id = $1::text AND owner = $2::text AND status = '{_RUNNING}'
    RETURNING run_id
), recorded AS (
    INSERT INTO tool_results (run_id, tool_call_id, data)
    SELECT owned.run_id, r.tool_call_id, r.data
    FROM owned, unnest($5::text[], $6::bytea[]) WITH ORDINALITY AS r(tool_call_id, data, ord)
    ORDER BY r.ord
    ON CONFLICT (run_id, tool_call_id) DO NOTHING
)
SELECT count(*) FROM owned
"""
"""$1 run_id, $2 owner, $3 lease_expires_at, $4 now, $5 tool call ids, $6 result data.

ORDER BY keeps the batch's order in `position` (recording order); a call id
repeated within the batch keeps its first copy, as DO NOTHING skips rows that
conflict with rows the same statement inserted."""

_SQLITE_CLAIM_STEP = f"""
UPDATE runs
SET checkpoint_count = checkpoint_count + 1, last_sequence = max(last_sequence, ?),
    status = ?, owner = ?, lease_expires_at = ?, updated_at = ?
WHERE run_id = ? AND owner = ? AND status = '{_RUNNING}'
RETURNING {_RUN_COLUMNS}
"""
_SQLITE_BUMP_THREAD = (
    "UPDATE threads SET message_count = message_count + ?, updated_at = ? WHERE thread_id = ?"
    " RETURNING message_count"
)
_SQLITE_INSERT_MESSAGE = "INSERT INTO messages (thread_id, idx, run_id, data) VALUES (?, ?, ?, ?)"
_SQLITE_INSERT_CHECKPOINT = (
    "INSERT INTO checkpoints (run_id, thread_id, idx, record, delta_bytes, created_at)"
    " VALUES (?, ?, ?, ?, ?, ?)"
)
_SQLITE_INSERT_EVENT = (
    "INSERT INTO run_events (run_id, sequence, data) VALUES (?, ?, ?)"
    " ON CONFLICT (run_id, sequence) DO NOTHING"
)
_SQLITE_RENEW_LEASE = (
    "UPDATE runs SET lease_expires_at = ?, updated_at = ?"
    f" WHERE run_id = ? AND owner = ? AND status = '{_RUNNING}'"
)
_SQLITE_INSERT_TOOL_RESULT = (
    "INSERT INTO tool_results (run_id, tool_call_id, data) VALUES (?, ?, ?)"
    " ON CONFLICT (run_id, tool_call_id) DO NOTHING"
)


def _sqlite_text(value: datetime) -> str:
    """A timestamp as UtcDateTime stores it on SQLite: naive UTC, always with microseconds.

    The format matters beyond reading back: lease comparisons on SQLite
    compare these strings.
    """
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(" ", "microseconds")


def _sqlite_datetime(value: str) -> datetime:
    return datetime.fromisoformat(value).replace(tzinfo=UTC)


def _sqlite_run_row(values: Sequence[Any]) -> RunRow:
    """A RunRow from a `_RUN_COLUMNS` tuple as sqlite3 returns it (text timestamps, 0/1 booleans)."""
    return RunRow(
        run_id=values[0],
        thread_id=values[1],
        user_id=values[2],
        status=RunStatus(values[3]),
        request=bytes(values[4]),
        owner=values[5],
        lease_expires_at=None if values[6] is None else _sqlite_datetime(values[6]),
        cancel_requested=bool(values[7]),
        checkpoint_count=values[8],
        last_sequence=values[9],
        created_at=_sqlite_datetime(values[10]),
        updated_at=_sqlite_datetime(values[11]),
    )


def _sqlite_write_checkpoint(
    db: sqlite3.Connection,
    claim: tuple[Any, ...],
    now: str,
    run_id: str,
    messages: list[bytes],
    checkpoint: tuple[bytes, int, str],
    events: list[tuple[str, int, bytes]],
) -> tuple[Any, ...] | None:
    """write_checkpoint's statements (in the connection's thread, inside `_sqlite_transaction`).

    Returns the updated run's `_RUN_COLUMNS`, or None (and writes nothing) when
    the caller does not own the run.
    """
    claimed = db.execute(_SQLITE_CLAIM_STEP, claim).fetchall()
    if not claimed:
        return None
    run = claimed[0]
    thread_id, checkpoint_idx = run[1], run[8]
    # fetchall, here and above: a statement left unfinished would hold up COMMIT.
    ((message_count,),) = db.execute(_SQLITE_BUMP_THREAD, (len(messages), now, thread_id)).fetchall()
    if messages:
        first = message_count - len(messages)
        db.executemany(
            _SQLITE_INSERT_MESSAGE,
            [(thread_id, first + i, run_id, data) for i, data in enumerate(messages)],
        )
    record, delta_bytes, created_at = checkpoint
    db.execute(
        _SQLITE_INSERT_CHECKPOINT, (run_id, thread_id, checkpoint_idx, record, delta_bytes, created_at)
    )
    if events:
        db.executemany(_SQLITE_INSERT_EVENT, events)
    return tuple(run)


def _sqlite_record_tool_results(
    db: sqlite3.Connection, renew: tuple[str, str, str, str], rows: list[tuple[str, str, bytes]]
) -> bool:
    """record_tool_results' statements; False (nothing written) when the caller does not own the run."""
    if db.execute(_SQLITE_RENEW_LEASE, renew).rowcount == 0:
        return False
    db.executemany(_SQLITE_INSERT_TOOL_RESULT, rows)
    return True


def _sqlite_in_transaction(db: sqlite3.Connection, body: Callable[..., _T], *args: Any) -> _T:
    """Run `body(db, *args)` in a BEGIN IMMEDIATE transaction: commit, or roll back on any error."""
    db.execute("BEGIN IMMEDIATE")
    try:
        result = body(db, *args)
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return result


async def _run_to_completion(cleanup: Awaitable[_T]) -> _T:
    """Await `cleanup` to its end even if the caller is cancelled meanwhile (then re-raise that).

    What SQLAlchemy's AsyncConnection does when closing: a checkin abandoned
    halfway would leave the pool to invalidate the connection and log an error.
    """
    task = asyncio.ensure_future(cleanup)
    cancelled: asyncio.CancelledError | None = None
    while True:
        try:
            result = await asyncio.shield(task)
        except asyncio.CancelledError as err:
            if task.done():
                raise
            cancelled = err
        else:
            break
    if cancelled is not None:
        raise cancelled
    return result


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
        self._writer = self._engine.execution_options(**{_BEGIN_OPTION: "IMMEDIATE"})
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
        if self._sqlite_writer is None:
            async with self._writer.begin() as conn:
                yield conn
            return
        async with self._sqlite_writer, self._writer.begin() as conn:
            yield conn

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[AsyncConnection]:
        """A plain (deferred) transaction, rolled back on exit: readers never queue behind writers."""
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
                await _run_to_completion(greenlet_spawn(fairy.close))

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
            result: _T = await aio._execute(_sqlite_in_transaction, aio._conn, body, *args)
        return result

    def _insert_ignoring(self, table: Table, *keys: str) -> Insert:
        """INSERT … ON CONFLICT (keys) DO NOTHING: the first write of a key wins."""
        if self._dialect == "postgresql":
            return postgresql.insert(table).on_conflict_do_nothing(index_elements=list(keys))
        return sqlite.insert(table).on_conflict_do_nothing(index_elements=list(keys))

    # --- threads -----------------------------------------------------------
    async def get_thread(self, thread_id: str) -> ThreadRow | None:
        async with self._read() as conn:
            row = (
                (await conn.execute(select(t.threads).where(t.threads.c.thread_id == thread_id)))
                .mappings()
                .one_or_none()
            )
        return None if row is None else _thread_row(row)

    async def create_thread(self, thread_id: str, user_id: str) -> ThreadRow:
        now = _now()
        async with self._write() as conn:
            await conn.execute(
                self._insert_ignoring(t.threads, "thread_id").values(
                    thread_id=thread_id, user_id=user_id, created_at=now, updated_at=now, message_count=0
                )
            )
            row = (
                (await conn.execute(select(t.threads).where(t.threads.c.thread_id == thread_id)))
                .mappings()
                .one()
            )
        return _thread_row(row)

    async def thread_messages(self, thread_id: str, limit: int | None = None) -> list[common_pb2.Message]:
        stmt = (
            select(t.messages.c.data)
            .where(t.messages.c.thread_id == thread_id)
            .order_by(t.messages.c.idx)
            .limit(limit)
        )
        async with self._read() as conn:
            rows = (await conn.execute(stmt)).scalars().all()
        return [common_pb2.Message.FromString(data) for data in rows]

    # --- runs --------------------------------------------------------------
    async def create_run(self, run_id: str, thread_id: str, user_id: str, request: bytes) -> RunRow:
        """Raises NotFound for an unknown thread, FailedPrecondition for a duplicate run_id."""
        now = _now()
        try:
            async with self._write() as conn:
                # Touching the thread also keeps prune() from deleting it
                # between this run's creation and its start.
                touched = await conn.execute(
                    update(t.threads).where(t.threads.c.thread_id == thread_id).values(updated_at=now)
                )
                if touched.rowcount == 0:
                    raise NotFound(f"thread {thread_id} not found")
                row = (
                    (
                        await conn.execute(
                            t.runs.insert()
                            .values(
                                run_id=run_id,
                                thread_id=thread_id,
                                user_id=user_id,
                                status=_QUEUED,
                                request=request,
                                owner=None,
                                lease_expires_at=None,
                                cancel_requested=False,
                                checkpoint_count=0,
                                last_sequence=0,
                                created_at=now,
                                updated_at=now,
                            )
                            .returning(*t.runs.c)
                        )
                    )
                    .mappings()
                    .one()
                )
        except IntegrityError:
            raise FailedPrecondition(f"run {run_id} already exists") from None
        return _run_row(row)

    async def start_run(self, run_id: str, owner: str, lease_s: float) -> RunRow:
        """Raises NotFound for an unknown run and FailedPrecondition for one that is not QUEUED."""
        now = _now()
        try:
            async with self._write() as conn:
                row = (
                    (
                        await conn.execute(
                            update(t.runs)
                            .where(t.runs.c.run_id == run_id, t.runs.c.status == _QUEUED)
                            .values(
                                status=_RUNNING,
                                owner=owner,
                                lease_expires_at=now + timedelta(seconds=lease_s),
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
        return _run_row(row)

    async def get_run(self, run_id: str) -> RunRow | None:
        async with self._read() as conn:
            row = (
                (await conn.execute(select(t.runs).where(t.runs.c.run_id == run_id))).mappings().one_or_none()
            )
        return None if row is None else _run_row(row)

    async def latest_run(self, thread_id: str) -> RunRow | None:
        stmt = (
            select(t.runs)
            .where(t.runs.c.thread_id == thread_id)
            .order_by(t.runs.c.created_at.desc(), t.runs.c.run_id.desc())
            .limit(1)
        )
        async with self._read() as conn:
            row = (await conn.execute(stmt)).mappings().one_or_none()
        return None if row is None else _run_row(row)

    async def write_checkpoint(self, write: CheckpointWrite) -> RunRow:
        """One node transition: the run's counters and lease, the thread's messages, the record, the events.

        The hottest write of a run, so it skips SQLAlchemy's statement
        machinery (see "the write hot path" above): Postgres gets it as one
        statement, one round trip; SQLite as one call into the connection's
        thread. The ownership check comes first and locks the run row, so a
        concurrent claim either happened before (nothing written: LeaseLost)
        or waits for this commit.
        """
        now = _now()
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
        status: str = _RUNNING
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
                    _PG_WRITE_CHECKPOINT,
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
                )
            if row is None:
                raise LeaseLost(f"run {write.run_id} is not running under owner {write.owner}")
            return _run_row(row)
        stamp = _sqlite_text(now)
        values = await self._sqlite_transaction(
            _sqlite_write_checkpoint,
            (
                last_sequence,
                status,
                owner,
                None if lease_expires_at is None else _sqlite_text(lease_expires_at),
                stamp,
                write.run_id,
                write.owner,
            ),
            stamp,
            write.run_id,
            message_data,
            (record, delta_bytes, stamp),
            [(write.run_id, e.sequence, e.SerializeToString()) for e in events],
        )
        if values is None:
            raise LeaseLost(f"run {write.run_id} is not running under owner {write.owner}")
        return _sqlite_run_row(values)

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
        parallel calls cost about what one call does.
        """
        if not results:
            return
        now = _now()
        if self._sqlite_writer is None:
            async with self._driver() as pg:
                owned = await pg.fetchval(
                    _PG_RECORD_TOOL_RESULTS,
                    run_id,
                    owner,
                    now + timedelta(seconds=self.lease_s),
                    now,
                    [r.tool_call_id for r in results],
                    [r.SerializeToString() for r in results],
                )
        else:
            owned = await self._sqlite_transaction(
                _sqlite_record_tool_results,
                (_sqlite_text(now + timedelta(seconds=self.lease_s)), _sqlite_text(now), run_id, owner),
                [(run_id, r.tool_call_id, r.SerializeToString()) for r in results],
            )
        if not owned:
            raise LeaseLost(f"run {run_id} is not running under owner {owner}")

    async def tool_results(self, run_id: str) -> dict[str, common_pb2.ToolResult]:
        stmt = (
            select(t.tool_results.c.tool_call_id, t.tool_results.c.data)
            .where(t.tool_results.c.run_id == run_id)
            .order_by(t.tool_results.c.position)
        )
        async with self._read() as conn:
            rows = (await conn.execute(stmt)).all()
        return {call_id: common_pb2.ToolResult.FromString(data) for call_id, data in rows}

    async def request_cancel(self, run_id: str) -> RunRow:
        """Raises NotFound for an unknown run."""
        now = _now()
        runs = t.runs.c
        # No live owner will ever read cancel_requested, so end the run here.
        at_once = or_(runs.status == _QUEUED, and_(runs.status == _RUNNING, _expired(now)))
        stmt = (
            update(t.runs)
            .where(runs.run_id == run_id)
            .values(
                cancel_requested=True,
                updated_at=now,
                status=case((at_once, literal(_CANCELLED)), else_=runs.status),
                owner=case((at_once, null()), else_=runs.owner),
                lease_expires_at=case((at_once, null()), else_=runs.lease_expires_at),
            )
            .returning(*t.runs.c)
        )
        async with self._write() as conn:
            row = (await conn.execute(stmt)).mappings().one_or_none()
        if row is None:
            raise NotFound(f"run {run_id} not found")
        return _run_row(row)

    async def set_status(self, run_id: str, status: RunStatus) -> RunRow:
        """Raises NotFound for an unknown run (ThreadBusy when forcing RUNNING onto a busy thread)."""
        now = _now()
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
        return _run_row(row)

    # --- ownership ---------------------------------------------------------
    async def heartbeat(self, owner: str, lease_s: float) -> int:
        now = _now()
        async with self._write() as conn:
            result = await conn.execute(
                update(t.runs)
                .where(t.runs.c.owner == owner, t.runs.c.status == _RUNNING)
                .values(lease_expires_at=now + timedelta(seconds=lease_s))
            )
        return result.rowcount

    async def claim_run(self, run_id: str, owner: str, lease_s: float) -> bool:
        now = _now()
        runs = t.runs.c
        async with self._write() as conn:
            result = await conn.execute(
                update(t.runs)
                .where(
                    runs.run_id == run_id,
                    runs.status == _RUNNING,
                    or_(runs.owner == owner, runs.owner.is_(None), _expired(now)),
                )
                .values(owner=owner, lease_expires_at=now + timedelta(seconds=lease_s))
            )
        return result.rowcount == 1

    async def claim_orphans(self, owner: str, lease_s: float, limit: int) -> list[str]:
        if limit <= 0:
            return []
        now = _now()
        expires = now + timedelta(seconds=lease_s)
        runs = t.runs.c
        orphan = and_(runs.status == _RUNNING, _expired(now))
        # An alias, or SQLAlchemy would correlate the subquery to the UPDATE's
        # own table and the LIMIT would apply per row.
        inner = t.runs.alias("candidate")
        candidates = (
            select(inner.c.run_id)
            .where(inner.c.status == _RUNNING, _expired(now, inner))
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
        now = _now()
        async with self._write() as conn:
            result = await conn.execute(
                update(t.runs)
                .where(t.runs.c.owner == owner, t.runs.c.status == _RUNNING)
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
        return None if row is None else _checkpoint_row(row)

    async def get_checkpoint(self, run_id: str, index: int) -> CheckpointRow | None:
        stmt = select(t.checkpoints).where(t.checkpoints.c.run_id == run_id, t.checkpoints.c.idx == index)
        async with self._read() as conn:
            row = (await conn.execute(stmt)).mappings().one_or_none()
        return None if row is None else _checkpoint_row(row)

    async def list_checkpoints(
        self, thread_id: str, run_id: str | None, after_position: int, limit: int
    ) -> list[CheckpointRow]:
        cps = t.checkpoints.c
        stmt = (
            select(t.checkpoints)
            .where(cps.thread_id == thread_id, cps.position > after_position)
            .order_by(cps.position)
            .limit(limit)
        )
        if run_id is not None:
            stmt = stmt.where(cps.run_id == run_id)
        async with self._read() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [_checkpoint_row(row) for row in rows]

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
        return [agent_pb2.RunEvent.FromString(data) for data in rows]

    async def append_events(self, run_id: str, events: Sequence[agent_pb2.RunEvent]) -> None:
        """Raises NotFound for an unknown run; keeps the run's last_sequence in step."""
        if not events:
            return
        async with self._write() as conn:
            touched = await conn.execute(
                update(t.runs)
                .where(t.runs.c.run_id == run_id)
                .values(last_sequence=_greatest(t.runs.c.last_sequence, max(e.sequence for e in events)))
            )
            if touched.rowcount == 0:
                raise NotFound(f"run {run_id} not found")
            await self._insert_events(conn, run_id, events)

    # --- retention and accounting -----------------------------------------
    async def prune(self, keep_last: int, idle_ttl_s: float | None) -> PruneStats:
        keep = max(1, keep_last)
        now = _now()
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
                        t.runs.c.status.in_(t.ACTIVE_STATUSES),
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
