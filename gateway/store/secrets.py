"""`SqlStore`'s secrets: random values created once per database and shared by its gateways."""

from __future__ import annotations

import secrets

from sqlalchemy import select

from gateway.store import tables as t
from gateway.store.sqlbase import SqlBase

SECRET_BYTES = 32


class SecretQueries(SqlBase):
    """Named random values (the page-token key): the first gateway to ask creates one, all read it."""

    async def secret(self, name: str) -> bytes:
        async with self._write() as conn:
            await conn.execute(
                self._dialect.insert_ignoring(t.secrets, "name").values(
                    name=name, value=secrets.token_bytes(SECRET_BYTES)
                )
            )
            value: bytes = (
                await conn.execute(select(t.secrets.c.value).where(t.secrets.c.name == name))
            ).scalar_one()
        return value
