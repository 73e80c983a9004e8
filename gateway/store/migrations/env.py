"""Alembic environment: runs the revisions over an async engine (asyncpg or aiosqlite).

`gateway.store.migrate` hands over an open connection in
`config.attributes["connection"]`; without one (the plain `alembic` command)
an engine is built from `sqlalchemy.url`. Either way the migrations run
through `run_sync`, so no synchronous driver is needed.
"""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy import Connection, pool
from sqlalchemy.ext.asyncio import async_engine_from_config

from gateway.store.tables import Base

PG_MIGRATION_LOCK = 0x6167_6C70
"""Advisory lock key: gateways started together migrate one after the other."""

config = context.config
target_metadata = Base.metadata


def run_migrations(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        # SQLite can only alter a table by copying it; batch mode does that.
        render_as_batch=connection.dialect.name == "sqlite",
        transactional_ddl=True,
    )
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            # Taken before alembic reads the version table, so a second
            # gateway sees the first one's result instead of redoing it.
            connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({PG_MIGRATION_LOCK})")
        context.run_migrations()


async def run_async_migrations() -> None:
    engine = async_engine_from_config(
        config.get_section(config.config_ini_section, {}), prefix="sqlalchemy.", poolclass=pool.NullPool
    )
    try:
        async with engine.connect() as connection:
            await connection.run_sync(run_migrations)
    finally:
        await engine.dispose()


def run_migrations_offline() -> None:
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=target_metadata)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
elif (given := config.attributes.get("connection")) is not None:
    run_migrations(given)
else:
    asyncio.run(run_async_migrations())
