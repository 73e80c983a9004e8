"""A throwaway Postgres database for a benchmark run, on the server named by AGENTLOOP_BENCH_POSTGRES."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg

DEFAULT_SERVER = "postgresql://postgres@127.0.0.1:5432/postgres"


@asynccontextmanager
async def bench_database() -> AsyncIterator[str]:
    """Create a fresh database, yield its `postgresql+asyncpg://` URL, drop it afterwards."""
    server = os.environ.get("AGENTLOOP_BENCH_POSTGRES", DEFAULT_SERVER)
    name = f"agentloop_bench_{uuid.uuid4().hex[:8]}"
    conn = await asyncpg.connect(server)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    base, _, _ = server.rpartition("/")
    try:
        yield f"{base.replace('postgresql://', 'postgresql+asyncpg://', 1)}/{name}"
    finally:
        conn = await asyncpg.connect(server)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()
