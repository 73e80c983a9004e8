"""Every store test runs on both backends: SQLite (a file) and a real Postgres.

Both are migrated once per session. SQLite tests get a copy of the migrated
file; Postgres tests share one migrated database that is emptied before each
test (deleting the threads cascades to everything else), which is several
times faster than creating a database per test.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from sqlalchemy import NullPool, delete
from sqlalchemy.ext.asyncio import create_async_engine

from gateway.store import migrate, tables
from gateway.store.sql import SqlStore
from tests.support.postgres import create_database, database_url, drop_database, fresh_postgres_database
from tests.support.postgres import run_coroutine as run

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sqlite-template") / "template.db"
    run(migrate.upgrade_async(f"sqlite+aiosqlite:///{path}"))
    return path


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    name = run(create_database())
    try:
        url = database_url(name)
        run(migrate.upgrade_async(url))
        yield url
    finally:
        run(drop_database(name))


async def _empty(url: str) -> None:
    engine = create_async_engine(url, poolclass=NullPool)
    try:
        async with engine.begin() as conn:
            await conn.execute(delete(tables.threads))
            await conn.execute(delete(tables.memories))
    finally:
        await engine.dispose()


@pytest.fixture(params=BACKENDS)
async def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A migrated, empty database of the parametrized backend."""
    if request.param == "sqlite":
        path = tmp_path / "store.db"
        shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
        yield f"sqlite+aiosqlite:///{path}"
    else:
        url = request.getfixturevalue("postgres_database")
        await _empty(url)
        yield url


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[SqlStore]:
    """Gateway A."""
    s = SqlStore(store_url, lease_s=30.0)
    try:
        yield s
    finally:
        await s.close()


@pytest.fixture
async def store_b(store_url: str) -> AsyncIterator[SqlStore]:
    """Gateway B: a second engine on the same database, as another process would have."""
    s = SqlStore(store_url, lease_s=30.0)
    try:
        yield s
    finally:
        await s.close()


@pytest.fixture(params=BACKENDS)
async def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A database that was never migrated."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}"
    else:
        async with fresh_postgres_database() as url:
            yield url
