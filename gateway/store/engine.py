"""The SQLAlchemy engine SqlStore runs on: async-driver URLs and SQLite's connection setup.

SQLite: every write transaction starts with `BEGIN IMMEDIATE` (see `gateway.store.sql`); the
"begin" hook installed here issues whatever BEGIN the `BEGIN_OPTION` execution option names.
"""

from __future__ import annotations

import logging
import time
import weakref
from typing import Any

from sqlalchemy import event, exc
from sqlalchemy.engine import URL, Connection, Engine, ExceptionContext, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from agentloop.kernel.settings import DB_TEMP_FILE_LIMIT, check_database_url
from gateway.store.errors import is_connection_error

SQLITE_BUSY_TIMEOUT_MS = 5000
BEGIN_OPTION = "agentloop_sqlite_begin"
POOL_SIZE = 32
POOL_OVERFLOW = 0
IDLE_PING_S = 2.0
"""A pooled Postgres connection idle for longer than this is pinged before it is handed out."""

log = logging.getLogger(__name__)
_stale_since: weakref.WeakKeyDictionary[Engine, float] = weakref.WeakKeyDictionary()
"""When a connection of the engine was last seen dead: pooled ones idle since then are pinged first."""


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


def make_engine(
    url: str,
    *,
    pool_size: int = POOL_SIZE,
    max_overflow: int = POOL_OVERFLOW,
    temp_file_limit: str | None = DB_TEMP_FILE_LIMIT,
) -> AsyncEngine:
    """An engine configured the way SqlStore relies on (also used by the migrations).

    `hide_parameters`: bound values (users' text) never appear in SQLAlchemy's
    logs or error messages; see `gateway.store.errors`.

    Postgres pool: at most POOL_SIZE connections, no overflow, last in first
    out. A burst of writers beyond it waits for a connection (for up to
    SQLAlchemy's 30 s pool timeout, then the store's retries) instead of
    opening one: an overflow connection is closed as soon as it comes back,
    so under a steady 50 concurrent runs the old 20 + 10 overflow opened a
    new Postgres session (a fork and an authentication, on both sides) for
    every few writes, 1,082 sessions for 200 runs, and the gateway ran at
    half its throughput. LIFO keeps a light load on the same few warm
    connections. Staleness (a server restart, a proxy that dropped an idle
    connection) is checked only for connections idle for more than
    IDLE_PING_S (`_ping_when_idle`): SQLAlchemy's `pool_pre_ping` would spend
    BEGIN, a ping and ROLLBACK (three round trips) before every hot-path
    write. A connection that breaks between two uses anyway fails its
    statement, is invalidated, and the store's retries
    (`gateway.store.errors.with_store_retries`) run the write again on a new
    one; and once one connection was found dead (`mark_stale`), every other
    that sat in the pool meanwhile is pinged before use, so a server
    restart costs a burst of writers one failure, not one per connection.

    `temp_file_limit` (Postgres): each connection's `temp_file_limit`, the
    most temporary file space one query may use (a sort or hash that does
    not fit in work_mem spills there); None leaves the server's. A query
    past it fails cleanly (QueryTooLarge) instead of filling the server's
    disk.
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
    engine = create_async_engine(
        parsed, pool_size=pool_size, max_overflow=max_overflow, pool_use_lifo=True, hide_parameters=True
    )
    _ping_when_idle(engine)
    if temp_file_limit:
        _limit_temp_files(engine, temp_file_limit)
    return engine


def mark_stale(engine: AsyncEngine) -> None:
    """A connection of `engine` died (the server restarted?): ping the pooled ones before using them."""
    _stale_since[engine.sync_engine] = time.monotonic()


def _limit_temp_files(engine: AsyncEngine, limit: str) -> None:
    """Set `temp_file_limit` on every new connection (a role that may not set it keeps the server's)."""
    warned: list[bool] = []

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        try:
            dbapi_connection.run_async(
                lambda conn: conn.execute("SELECT set_config('temp_file_limit', $1, false)", limit)
            )
        except Exception as error:  # e.g. permission denied: it is a superuser setting before Postgres 15
            if not warned:
                warned.append(True)
                log.warning(
                    "could not set temp_file_limit=%s on the gateway's connections (%s); the server's "
                    "setting applies (ALTER ROLE … SET temp_file_limit, or GRANT SET ON PARAMETER)",
                    limit,
                    type(error).__name__,
                )


def _ping_when_idle(engine: AsyncEngine) -> None:
    """Ping a connection on checkout only when it sat in the pool for more than IDLE_PING_S."""
    sync_engine = engine.sync_engine
    dialect = sync_engine.dialect

    @event.listens_for(sync_engine, "connect")
    def _on_connect(_dbapi_connection: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(sync_engine, "checkin")
    def _on_checkin(_dbapi_connection: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(sync_engine, "handle_error")
    def _on_error(context: ExceptionContext) -> None:
        # SQLAlchemy takes an error for a lost connection only once asyncpg has closed it, and
        # a server shutting down sends its error before it closes the socket: such a
        # connection went back to the pool, mid-protocol, for the next statement to fail on.
        if not context.is_disconnect and is_connection_error(context.original_exception):
            context.is_disconnect = True
            _stale_since[sync_engine] = time.monotonic()

    @event.listens_for(sync_engine, "checkout")
    def _on_checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        idle_since = record.info.get("idle_since", 0.0)
        recent = time.monotonic() - idle_since <= IDLE_PING_S
        if recent and idle_since > _stale_since.get(sync_engine, -1.0):
            return
        try:
            dialect.do_ping(dbapi_connection)
        except Exception as error:
            # The pool discards this connection and checks out another (a new one if need be).
            raise exc.DisconnectionError("stale pooled connection") from error


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
