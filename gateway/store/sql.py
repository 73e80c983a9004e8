"""`SqlStore`: the `Store` on Postgres (asyncpg) or SQLite (aiosqlite) through SQLAlchemy Core.

Correctness rests on the database, not on Python: ownership is a
compare-and-set `UPDATE … WHERE owner = :me AND status = 'running'` whose row
count says whether the caller still owns the run, one RUNNING run per thread is
a partial unique index, and appends take their positions from counters bumped
inside the same transaction. So any number of gateways (processes, or engines
in one process) can share a database.

Where the two backends must differ (SQLite's single writer, Postgres-only
statements, the hot path's driver calls, LISTEN/NOTIFY) the store asks its
dialect (`gateway.store.dialects`) rather than testing which one it runs on.

The write hot path (`write_checkpoint`, `record_tool_results`) runs once or
more per step of every run, so it bypasses SQLAlchemy's statement machinery
for fixed SQL handed to the driver; see `gateway.store.hotpath`. Everything
else is SQLAlchemy Core, where clarity is worth more than its per-call cost.
"""

from __future__ import annotations

import inspect
from typing import Any, TypeVar

from sqlalchemy import text

from gateway.store.base import Store
from gateway.store.engine import SQLITE_BUSY_TIMEOUT_MS, make_engine, to_async_url
from gateway.store.errors import retried
from gateway.store.history import HistoryQueries
from gateway.store.leases import LeaseQueries
from gateway.store.memories import MemoryQueries
from gateway.store.retention import RetentionQueries
from gateway.store.runs import RunQueries
from gateway.store.secrets import SecretQueries
from gateway.store.sqlbase import DEFAULT_LEASE_S
from gateway.store.threads import ThreadQueries

# Re-exported: callers import these from here since before the split.
__all__ = ["DEFAULT_LEASE_S", "SQLITE_BUSY_TIMEOUT_MS", "SqlStore", "make_engine", "to_async_url"]


_C = TypeVar("_C", bound=type[Any])
NOT_RETRIED = frozenset({"ping", "close"})
"""`ping` answers the health probe at once, whatever the database's state; `close` only closes."""


def _retrying(cls: _C) -> _C:
    """Every `Store` method of `cls` retried through `gateway.store.errors.retried` (but NOT_RETRIED).

    One place, so that no caller (an RPC handler, a run, a background loop)
    sees a database that is coming back as anything but a short wait, or,
    past the store's retry budget, StoreUnavailable. The methods are safe to
    run again after a failure whose outcome is unknown: reads, and writes
    that find their own first attempt's work (an insert of the same key, a
    compare-and-set the caller already won) and keep it.
    """
    for name, _ in inspect.getmembers(Store, inspect.iscoroutinefunction):
        if name.startswith("_") or name in NOT_RETRIED:
            continue
        setattr(cls, name, retried(getattr(cls, name)))
    return cls


@_retrying
class SqlStore(
    ThreadQueries,
    RunQueries,
    LeaseQueries,
    HistoryQueries,
    MemoryQueries,
    RetentionQueries,
    SecretQueries,
    Store,
):
    """The Store on one SQLAlchemy `AsyncEngine` (Postgres or SQLite), its parts in one class.

    Each part (`gateway.store.threads`, `.runs`, `.leases`, `.history`,
    `.memories`, `.retention`, `.secrets`) stands on `gateway.store.sqlbase.SqlBase`.
    """

    async def ping(self) -> None:
        async with self._read() as conn:
            await conn.execute(text("SELECT 1"))

    @property
    def live_dsn(self) -> str | None:
        return self._dialect.live_dsn

    async def close(self) -> None:
        await self._engine.dispose()
