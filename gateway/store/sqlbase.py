"""What every part of `SqlStore` stands on: its engine, its dialect and its two kinds of transaction.

Readers take a plain pooled connection and never queue behind writers;
writers go through the dialect, which on SQLite queues them on the file's one
write lock. Both scrub SQL and bound values from the errors they let out
(`gateway.store.errors`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from agentloop.kernel.retry import STORE_RETRY_BUDGET_S
from agentloop.kernel.settings import DB_TEMP_FILE_LIMIT
from gateway.store.dialects import dialect_for
from gateway.store.engine import POOL_OVERFLOW, POOL_SIZE, make_engine
from gateway.store.errors import scrubbed

DEFAULT_LEASE_S = 30.0


class SqlBase:
    """One SQLAlchemy `AsyncEngine` (Postgres or SQLite) and its dialect, shared by `SqlStore`'s parts.

    `lease_s` is how long `write_checkpoint` and `record_tool_results` extend
    the writer's lease: the methods that take no lease argument but prove the
    owner is alive.

    `retry_budget_s` is how long each method retries a database that is
    away, restarting or refusing connections before it raises
    StoreUnavailable (UNAVAILABLE with RetryInfo); see
    `gateway.store.errors.retried`. `temp_file_limit`: see `make_engine`.
    """

    def __init__(
        self,
        url: str,
        *,
        lease_s: float = DEFAULT_LEASE_S,
        pool_size: int = POOL_SIZE,
        max_overflow: int = POOL_OVERFLOW,
        retry_budget_s: float = STORE_RETRY_BUDGET_S,
        temp_file_limit: str | None = DB_TEMP_FILE_LIMIT,
    ) -> None:
        self._engine = make_engine(
            url, pool_size=pool_size, max_overflow=max_overflow, temp_file_limit=temp_file_limit
        )
        self._dialect = dialect_for(self._engine)
        self.lease_s = lease_s
        self.retry_budget_s = retry_budget_s

    @property
    def engine(self) -> AsyncEngine:
        """The engine underneath, for tests and tools that inspect the database itself."""
        return self._engine

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[AsyncConnection]:
        """A transaction that will write: commits on success, rolls back on any exception."""
        with scrubbed():
            async with self._dialect.write() as conn:
                yield conn

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[AsyncConnection]:
        """A connection for reads (see the dialect's `read`): readers never queue behind writers."""
        with scrubbed():
            async with self._dialect.read() as conn:
                yield conn
