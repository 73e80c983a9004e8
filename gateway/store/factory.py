"""Opening the store from a URL: where the default SQLite file lives, which driver, migrations."""

from __future__ import annotations

import os
from pathlib import Path

from gateway.store import migrate as migrations
from gateway.store.engine import to_async_url
from gateway.store.sql import DEFAULT_LEASE_S, SqlStore

DB_FILENAME = "agentloop.db"


def default_sqlite_url() -> str:
    """`$AGENTLOOP_HOME/agentloop.db`, else `~/.local/share/agentloop/agentloop.db` (directory created)."""
    home = os.environ.get("AGENTLOOP_HOME", "")
    directory = Path(home).expanduser() if home else Path.home() / ".local" / "share" / "agentloop"
    directory.mkdir(parents=True, exist_ok=True)
    return f"sqlite+aiosqlite:///{directory / DB_FILENAME}"


def resolve_url(url: str | None) -> str:
    """The async-driver URL for `url`; None or "" means the default SQLite file.

    `postgres://` and `postgresql://` become `postgresql+asyncpg://`,
    `sqlite:///x` becomes `sqlite+aiosqlite:///x`.
    """
    return default_sqlite_url() if not url else to_async_url(url)


async def open_store(
    url: str | None = None,
    *,
    migrate: bool = True,
    pool_size: int = 20,
    max_overflow: int = 10,
    lease_s: float = DEFAULT_LEASE_S,
) -> SqlStore:
    """A ready SqlStore; with `migrate` the schema is upgraded to the newest revision first."""
    resolved = resolve_url(url)
    if migrate:
        await migrations.upgrade_async(resolved)
    return SqlStore(resolved, lease_s=lease_s, pool_size=pool_size, max_overflow=max_overflow)
