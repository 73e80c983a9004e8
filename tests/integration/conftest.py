"""The database every durable-run test runs against: embedded SQLite and a real Postgres."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.postgres import fresh_postgres_database


@pytest.fixture(params=["sqlite", "postgres"])
async def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A fresh, empty database URL of each backend."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'agentloop.db'}"
    else:
        async with fresh_postgres_database() as url:
            yield url
