"""Schema migrations, run from code (no alembic.ini): the gateway upgrades its database at start.

The revisions live in `gateway/store/migrations/versions`. They run over the
same engine configuration as SqlStore (async drivers through `run_sync`), so
SQLite migrations are transactional too, and on Postgres an advisory lock
makes gateways started together migrate one at a time.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection

from gateway.store.engine import make_engine, to_async_url

MIGRATIONS_DIR = Path(__file__).resolve().with_name("migrations")


def alembic_config(url: str) -> Config:
    """An in-memory alembic configuration pointing at our migrations and `url`."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    # ConfigParser interpolation would eat a '%' of a URL-encoded password.
    cfg.set_main_option("sqlalchemy.url", to_async_url(url).replace("%", "%%"))
    return cfg


def head_revision() -> str:
    """The newest revision this code knows."""
    head = ScriptDirectory.from_config(alembic_config("sqlite:///unused.db")).get_current_head()
    assert head is not None, "no migrations found"
    return head


async def upgrade_async(url: str, revision: str = "head") -> None:
    """Bring the database at `url` up to `revision` (a no-op when it is already there)."""
    cfg = alembic_config(url)

    def run(connection: Connection) -> None:
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, revision)

    engine = make_engine(url, pool_size=1, max_overflow=0)
    try:
        async with engine.connect() as conn:
            await conn.run_sync(run)
            await conn.commit()
    finally:
        await engine.dispose()


def upgrade(url: str, revision: str = "head") -> None:
    """Synchronous `upgrade_async`; from async code call it through `asyncio.to_thread`
    (it runs its own event loop) or await `upgrade_async` directly."""
    asyncio.run(upgrade_async(url, revision))


async def current_revision_async(url: str) -> str | None:
    """The revision the database is at; None when it was never migrated."""
    engine = make_engine(url, pool_size=1, max_overflow=0)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(lambda c: MigrationContext.configure(c).get_current_revision())
    finally:
        await engine.dispose()


def current_revision(url: str) -> str | None:
    """Synchronous `current_revision_async` (runs its own event loop, like `upgrade`)."""
    return asyncio.run(current_revision_async(url))
