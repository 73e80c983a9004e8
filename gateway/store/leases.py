"""`SqlStore`'s run ownership: leases renewed, expired runs claimed, runs handed over.

Every method is a compare-and-set `UPDATE` whose row count says who won, so
any number of gateways can claim concurrently and each run goes to one.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import and_, case, or_, select, update
from sqlalchemy.exc import IntegrityError

from gateway.store import tables as t
from gateway.store.base import LeaseLost, RunStatus, ThreadBusy
from gateway.store.rows import RUNNING, expired, greatest, utc_now
from gateway.store.sqlbase import SqlBase


class LeaseQueries(SqlBase):
    """Who executes which RUNNING run, decided by compare-and-set updates."""

    async def heartbeat(self, owner: str, lease_s: float, run_ids: Sequence[str]) -> int:
        if not run_ids:
            return 0
        now = utc_now()
        runs = t.runs.c
        async with self._write() as conn:
            result = await conn.execute(
                update(t.runs)
                .where(runs.run_id.in_(list(run_ids)), runs.owner == owner, runs.status == RUNNING)
                .values(lease_expires_at=now + timedelta(seconds=lease_s))
            )
        return result.rowcount

    async def claim_paused(
        self, run_id: str, owner: str, lease_s: float, request_id: str | None = None
    ) -> bool:
        now = utc_now()
        runs = t.runs.c
        values: dict[str, Any] = {
            "status": RUNNING,
            "owner": owner,
            "lease_expires_at": now + timedelta(seconds=lease_s),
            "updated_at": now,
        }
        if request_id:
            # Where the resumed run numbers on from (RunRow.next_sequence_base).
            values["resume_request_id"] = request_id
            values["resume_sequence"] = case(
                (runs.sequence_reserved > runs.last_sequence, runs.sequence_reserved),
                else_=runs.last_sequence,
            )
        try:
            async with self._write() as conn:
                result = await conn.execute(
                    update(t.runs)
                    .where(runs.run_id == run_id, runs.status == RunStatus.PAUSED.value)
                    .values(values)
                )
        except IntegrityError:
            raise ThreadBusy(f"the thread of run {run_id} already has a running run") from None
        return result.rowcount == 1

    async def reserve_sequences(self, run_id: str, owner: str, upto: int) -> None:
        runs = t.runs.c
        async with self._write() as conn:
            result = await conn.execute(
                update(t.runs)
                .where(runs.run_id == run_id, runs.owner == owner, runs.status == RUNNING)
                .values(sequence_reserved=greatest(runs.sequence_reserved, upto))
            )
        if result.rowcount != 1:
            raise LeaseLost(f"run {run_id} is not running under owner {owner}")

    async def claim_run(self, run_id: str, owner: str, lease_s: float) -> bool:
        now = utc_now()
        runs = t.runs.c
        async with self._write() as conn:
            result = await conn.execute(
                update(t.runs)
                .where(
                    runs.run_id == run_id,
                    runs.status == RUNNING,
                    or_(runs.owner == owner, runs.owner.is_(None), expired(now)),
                )
                .values(owner=owner, lease_expires_at=now + timedelta(seconds=lease_s))
            )
        return result.rowcount == 1

    async def claim_orphans(self, owner: str, lease_s: float, limit: int) -> list[str]:
        if limit <= 0:
            return []
        now = utc_now()
        expires = now + timedelta(seconds=lease_s)
        runs = t.runs.c
        orphan = and_(runs.status == RUNNING, expired(now))
        # An alias, or SQLAlchemy would correlate the subquery to the UPDATE's
        # own table and the LIMIT would apply per row.
        inner = t.runs.alias("candidate")
        candidates = (
            select(inner.c.run_id)
            .where(inner.c.status == RUNNING, expired(now, inner))
            .order_by(inner.c.updated_at)
            .limit(limit)
        )
        async with self._write() as conn:
            return await self._dialect.claim_orphans(conn, candidates, orphan, owner, expires)

    async def release(self, owner: str) -> int:
        now = utc_now()
        async with self._write() as conn:
            result = await conn.execute(
                update(t.runs)
                .where(t.runs.c.owner == owner, t.runs.c.status == RUNNING)
                .values(lease_expires_at=now)
            )
        return result.rowcount
