"""Opening the store from a URL: where the default SQLite file lives, which driver, migrations.

A database that cannot be reached at startup is retried briefly (it may be
starting alongside the gateway), then reported as `DatabaseUnreachable`: one
line saying where and why, which the command line prints instead of a
traceback.
"""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from agentloop.kernel.retry import STORE_RETRY_BUDGET_S
from agentloop.kernel.setting_errors import StartupError
from agentloop.kernel.settings import DB_TEMP_FILE_LIMIT, data_home
from gateway.store import migrate as migrations
from gateway.store.engine import POOL_OVERFLOW, POOL_SIZE, make_engine, to_async_url
from gateway.store.errors import scrubbed
from gateway.store.sql import DEFAULT_LEASE_S, SqlStore

log = logging.getLogger(__name__)

DEFAULT_CONNECT_S = 10.0


class DatabaseUnreachable(StartupError):
    """The database did not answer within the startup retry budget (or refused the connection)."""


DB_FILENAME = "agentloop.db"


def default_sqlite_url() -> str:
    """`$AGENTLOOP_HOME/agentloop.db`, else `~/.local/share/agentloop/agentloop.db` (directory created)."""
    directory = data_home()
    directory.mkdir(parents=True, exist_ok=True)
    return f"sqlite+aiosqlite:///{directory / DB_FILENAME}"


def resolve_url(url: str | None) -> str:
    """The async-driver URL for `url`; None or "" means the default SQLite file.

    `postgres://` and `postgresql://` become `postgresql+asyncpg://`,
    `sqlite:///x` becomes `sqlite+aiosqlite:///x`.
    """
    return default_sqlite_url() if not url else to_async_url(url)


def _reason(exc: BaseException) -> str:
    """The driver's own one-line account of a failure (never SQL text or bound values)."""
    cause = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    lines = str(cause).strip().splitlines()
    return f"{type(cause).__name__}: {lines[0]}" if lines else type(cause).__name__


async def check_reachable(url: str, connect_s: float = DEFAULT_CONNECT_S) -> None:
    """Connect and run `SELECT 1`, retrying for up to `connect_s`; DatabaseUnreachable if it never works.

    The same bounded, doubling backoff as the journal's store retries
    (`gateway.store.errors.with_store_retries`), for the one moment before any run exists.
    """
    engine = make_engine(url, pool_size=1, max_overflow=0)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + connect_s
    delay = 0.1
    try:
        while True:
            try:
                with scrubbed():
                    async with engine.connect() as conn:
                        await conn.execute(text("SELECT 1"))
                return
            except Exception as exc:
                if loop.time() + delay > deadline:
                    log.debug("database unreachable at startup", exc_info=True)
                    where = make_url(url).render_as_string(hide_password=True)
                    raise DatabaseUnreachable(
                        f"cannot open the database {where} (tried for {connect_s:g} s): {_reason(exc)}"
                    ) from None
                log.info("database not reachable yet (%s); retrying in %.1fs", _reason(exc), delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
    finally:
        await engine.dispose()


async def open_store(
    url: str | None = None,
    *,
    migrate: bool = True,
    pool_size: int = POOL_SIZE,
    max_overflow: int = POOL_OVERFLOW,
    lease_s: float = DEFAULT_LEASE_S,
    connect_s: float = DEFAULT_CONNECT_S,
    retry_budget_s: float = STORE_RETRY_BUDGET_S,
    temp_file_limit: str | None = DB_TEMP_FILE_LIMIT,
) -> SqlStore:
    """A ready SqlStore; with `migrate` the schema is upgraded to the newest revision first.

    Raises DatabaseUnreachable when the database does not answer within `connect_s`.
    `retry_budget_s` and `temp_file_limit`: see `gateway.store.sqlbase.SqlBase`.
    """
    resolved = resolve_url(url)
    await check_reachable(resolved, connect_s)
    if migrate:
        await migrations.upgrade_async(resolved)
    return SqlStore(
        resolved,
        lease_s=lease_s,
        pool_size=pool_size,
        max_overflow=max_overflow,
        retry_budget_s=retry_budget_s,
        temp_file_limit=temp_file_limit,
    )
