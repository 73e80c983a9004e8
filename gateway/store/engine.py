"""The SQLAlchemy engine SqlStore runs on: async-driver URLs and SQLite's connection setup.

SQLite: every write transaction starts with `BEGIN IMMEDIATE` (see `gateway.store.sql`); the
"begin" hook installed here issues whatever BEGIN the `BEGIN_OPTION` execution option names.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from agentloop.settings import check_database_url

SQLITE_BUSY_TIMEOUT_MS = 5000
BEGIN_OPTION = "agentloop_sqlite_begin"


def to_async_url(url: str) -> str:
    """The same database behind the async driver SqlStore needs (asyncpg / aiosqlite).

    Accepts what people paste from elsewhere: `postgres://`, `postgresql://`,
    `postgresql+psycopg://`, `sqlite:///file`. Anything else, a bare file path
    included, raises SettingError (a ValueError) saying which forms work.
    """
    check_database_url(url, "database URL")
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        parsed = parsed.set(drivername="sqlite+aiosqlite")
    else:
        parsed = parsed.set(drivername="postgresql+asyncpg")
    return parsed.render_as_string(hide_password=False)


def _sqlite_memory(url: URL) -> bool:
    return url.database in (None, "", ":memory:") or "mode=memory" in str(url)


def make_engine(url: str, *, pool_size: int = 20, max_overflow: int = 10) -> AsyncEngine:
    """An engine configured the way SqlStore relies on (also used by the migrations).

    `hide_parameters`: bound values (users' text) never appear in SQLAlchemy's
    logs or error messages; see `gateway.store.errors`.
    """
    parsed = make_url(to_async_url(url))
    if parsed.get_backend_name() == "sqlite":
        if _sqlite_memory(parsed):
            # Every pooled connection would see its own empty database.
            raise ValueError("SqlStore needs an SQLite file, not an in-memory database")
        engine = create_async_engine(
            parsed, pool_size=pool_size, max_overflow=max_overflow, hide_parameters=True
        )
        _configure_sqlite(engine)
        return engine
    return create_async_engine(
        parsed, pool_size=pool_size, max_overflow=max_overflow, pool_pre_ping=True, hide_parameters=True
    )


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
        mode = conn.get_execution_options().get(BEGIN_OPTION, "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")
