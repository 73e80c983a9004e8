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
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

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


class SqlStore(Store):
    """The Store on one SQLAlchemy `AsyncEngine` (Postgres or SQLite).

    `lease_s` is how long `write_checkpoint` and `record_tool_result` extend
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
        now = _now()
        record = write.record.SerializeToString()
        message_data = [m.SerializeToString() for m in write.new_messages]
        last_sequence = max([write.record.last_sequence, *(e.sequence for e in write.events)])
        values: dict[str, Any] = {
            "checkpoint_count": t.runs.c.checkpoint_count + 1,
            "last_sequence": _greatest(t.runs.c.last_sequence, last_sequence),
            "lease_expires_at": now + timedelta(seconds=self.lease_s),
            "updated_at": now,
        }
        if write.status is not None:
            values["status"] = write.status.value
            if write.status.ended:
                values["owner"] = None
                values["lease_expires_at"] = None
        async with self._write() as conn:
            # The ownership check and the checkpoint counter in one statement:
            # it locks the run row, so a concurrent claim either happened
            # before (no row: LeaseLost) or waits for this commit.
            run = (
                (
                    await conn.execute(
                        update(t.runs)
                        .where(
                            t.runs.c.run_id == write.run_id,
                            t.runs.c.owner == write.owner,
                            t.runs.c.status == _RUNNING,
                        )
                        .values(values)
                        .returning(*t.runs.c)
                    )
                )
                .mappings()
                .one_or_none()
            )
            if run is None:
                raise LeaseLost(f"run {write.run_id} is not running under owner {write.owner}")
            thread_id = run["thread_id"]
            message_count = (
                await conn.execute(
                    update(t.threads)
                    .where(t.threads.c.thread_id == thread_id)
                    .values(message_count=t.threads.c.message_count + len(message_data), updated_at=now)
                    .returning(t.threads.c.message_count)
                )
            ).scalar_one()
            if message_data:
                first = message_count - len(message_data)
                await conn.execute(
                    t.messages.insert(),
                    [
                        {"thread_id": thread_id, "idx": first + i, "run_id": write.run_id, "data": data}
                        for i, data in enumerate(message_data)
                    ],
                )
            await conn.execute(
                t.checkpoints.insert().values(
                    run_id=write.run_id,
                    thread_id=thread_id,
                    idx=run["checkpoint_count"],
                    record=record,
                    delta_bytes=len(record) + sum(len(d) for d in message_data),
                    created_at=now,
                )
            )
            await self._insert_events(conn, write.run_id, write.events)
        return _run_row(run)

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
        now = _now()
        async with self._write() as conn:
            owned = await conn.execute(
                update(t.runs)
                .where(t.runs.c.run_id == run_id, t.runs.c.owner == owner, t.runs.c.status == _RUNNING)
                .values(lease_expires_at=now + timedelta(seconds=self.lease_s), updated_at=now)
            )
            if owned.rowcount == 0:
                raise LeaseLost(f"run {run_id} is not running under owner {owner}")
            await conn.execute(
                self._insert_ignoring(t.tool_results, "run_id", "tool_call_id").values(
                    run_id=run_id, tool_call_id=result.tool_call_id, data=result.SerializeToString()
                )
            )

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
