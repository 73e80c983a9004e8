"""`SqlStore`'s runs: created, started, found, cancelled and forced to a status."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, case, literal, null, or_, select, update
from sqlalchemy.exc import IntegrityError

from agentloop.kernel.errors import FailedPrecondition, NotFound, Reason
from agentloop.v1 import agent_pb2
from gateway.store import tables as t
from gateway.store.base import RequestReplayed, RunRow, RunStatus, ThreadBusy
from gateway.store.rows import CANCELLED, QUEUED, RUNNING, expired, greatest, run_row, utc_now
from gateway.store.scope import thread_key
from gateway.store.sqlbase import DEFAULT_LEASE_S, SqlBase


class RunQueries(SqlBase):
    """The database decides every race here: a duplicate request id, a second RUNNING run on a thread."""

    async def create_run(
        self,
        run_id: str,
        thread_id: str,
        user_id: str,
        request: bytes,
        *,
        owner: str | None = None,
        lease_s: float = DEFAULT_LEASE_S,
        request_id: str | None = None,
        reserve: int = 0,
    ) -> RunRow:
        """Raises NotFound for an unknown thread, FailedPrecondition for a duplicate run_id.

        With `owner` the run is inserted RUNNING under that owner, or not at all
        (ThreadBusy) when the thread already has a RUNNING run.
        """
        now = utc_now()
        started = owner is not None
        key = thread_key(user_id, thread_id)
        try:
            async with self._write() as conn:
                # The run first, the thread after. The insert may wait for
                # another transaction holding a conflicting key (a concurrent
                # attempt of the same request, a checkpoint of the thread's
                # running run): holding the thread's row while waiting would
                # deadlock with that checkpoint, which updates the run, then
                # the thread.
                row = (
                    (
                        await conn.execute(
                            t.runs.insert()
                            .values(
                                run_id=run_id,
                                thread_id=key,
                                user_id=user_id,
                                status=RUNNING if started else QUEUED,
                                request=request,
                                owner=owner,
                                lease_expires_at=now + timedelta(seconds=lease_s) if started else None,
                                cancel_requested=False,
                                checkpoint_count=0,
                                last_sequence=0,
                                sequence_reserved=reserve if started else 0,
                                created_at=now,
                                updated_at=now,
                                request_id=request_id,
                            )
                            .returning(*t.runs.c)
                        )
                    )
                    .mappings()
                    .one()
                )
                # Touching the thread also keeps prune() from deleting it
                # between this run's creation and its start.
                await conn.execute(
                    update(t.threads).where(t.threads.c.thread_id == key).values(updated_at=now)
                )
        except IntegrityError:
            # This very run (a retry of an insert whose commit was not
            # acknowledged), the user's request id, the thread (missing), or
            # (started) the one-RUNNING-run-per-thread index.
            if (mine := await self.get_run(run_id)) is not None:
                if mine.thread_id == thread_id and mine.user_id == user_id and mine.request == request:
                    return mine
                raise FailedPrecondition(f"run {run_id} already exists") from None
            if request_id is not None and (replayed := await self.run_by_request(user_id, request_id)):
                raise RequestReplayed(replayed.run_id) from None
            if not await self._thread_exists(key):
                raise NotFound(f"thread {thread_id} not found", reason=Reason.THREAD_NOT_FOUND) from None
            if not started:
                raise
            raise ThreadBusy(f"thread {thread_id} already has a running run") from None
        return run_row(row)

    async def _thread_exists(self, key: str) -> bool:
        async with self._read() as conn:
            found = await conn.execute(select(t.threads.c.thread_id).where(t.threads.c.thread_id == key))
            return found.first() is not None

    async def start_run(self, run_id: str, owner: str, lease_s: float, reserve: int = 0) -> RunRow:
        """Raises NotFound for an unknown run and FailedPrecondition for one that is not QUEUED."""
        now = utc_now()
        try:
            async with self._write() as conn:
                row = (
                    (
                        await conn.execute(
                            update(t.runs)
                            .where(t.runs.c.run_id == run_id, t.runs.c.status == QUEUED)
                            .values(
                                status=RUNNING,
                                owner=owner,
                                lease_expires_at=now + timedelta(seconds=lease_s),
                                sequence_reserved=greatest(t.runs.c.sequence_reserved, reserve),
                                updated_at=now,
                            )
                            .returning(*t.runs.c)
                        )
                    )
                    .mappings()
                    .one_or_none()
                )
                if row is None:
                    status = (
                        await conn.execute(select(t.runs.c.status).where(t.runs.c.run_id == run_id))
                    ).scalar_one_or_none()
                    if status is None:
                        raise NotFound(f"run {run_id} not found", reason=Reason.RUN_NOT_FOUND)
                    raise FailedPrecondition(f"run {run_id} is {status}, not queued")
        except IntegrityError:
            # Only the partial unique index on (thread_id) WHERE status =
            # 'running' can fire on this UPDATE.
            raise ThreadBusy(f"the thread of run {run_id} already has a running run") from None
        return run_row(row)

    async def get_run(self, run_id: str) -> RunRow | None:
        async with self._read() as conn:
            row = (
                (await conn.execute(select(t.runs).where(t.runs.c.run_id == run_id))).mappings().one_or_none()
            )
        return None if row is None else run_row(row)

    async def latest_run(self, thread_id: str, *, user_id: str) -> RunRow | None:
        stmt = (
            select(t.runs)
            .where(t.runs.c.thread_id == thread_key(user_id, thread_id))
            .order_by(t.runs.c.created_at.desc(), t.runs.c.run_id.desc())
            .limit(1)
        )
        async with self._read() as conn:
            row = (await conn.execute(stmt)).mappings().one_or_none()
        return None if row is None else run_row(row)

    async def mark_resumed(self, run_id: str, request_id: str, after_sequence: int) -> None:
        async with self._write() as conn:
            await conn.execute(
                update(t.runs)
                .where(t.runs.c.run_id == run_id)
                .values(resume_request_id=request_id, resume_sequence=after_sequence)
            )

    async def run_by_request(self, user_id: str, request_id: str) -> RunRow | None:
        stmt = select(t.runs).where(t.runs.c.user_id == user_id, t.runs.c.request_id == request_id)
        async with self._read() as conn:
            row = (await conn.execute(stmt)).mappings().one_or_none()
        return None if row is None else run_row(row)

    async def list_runs(
        self, thread_id: str, limit: int, after: tuple[datetime, str] | None = None, *, user_id: str
    ) -> list[RunRow]:
        runs = t.runs.c
        stmt = (
            select(t.runs)
            .where(runs.thread_id == thread_key(user_id, thread_id))
            .order_by(runs.created_at.desc(), runs.run_id.desc())
            .limit(limit)
        )
        if after is not None:
            created_at, run_id = after
            stmt = stmt.where(
                or_(runs.created_at < created_at, and_(runs.created_at == created_at, runs.run_id < run_id))
            )
        async with self._read() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [run_row(row) for row in rows]

    async def request_cancel(self, run_id: str) -> RunRow:
        """Raises NotFound for an unknown run."""
        now = utc_now()
        runs = t.runs.c
        # No live owner will ever read cancel_requested, so end the run here.
        at_once = or_(runs.status == QUEUED, and_(runs.status == RUNNING, expired(now)))
        stmt = (
            update(t.runs)
            .where(runs.run_id == run_id)
            .values(
                cancel_requested=True,
                updated_at=now,
                status=case((at_once, literal(CANCELLED)), else_=runs.status),
                owner=case((at_once, null()), else_=runs.owner),
                lease_expires_at=case((at_once, null()), else_=runs.lease_expires_at),
            )
            .returning(*t.runs.c)
        )
        async with self._write() as conn:
            row = (await conn.execute(stmt)).mappings().one_or_none()
        if row is None:
            raise NotFound(f"run {run_id} not found", reason=Reason.RUN_NOT_FOUND)
        return run_row(row)

    async def end_run(
        self,
        run_id: str,
        status: RunStatus,
        events: Sequence[agent_pb2.RunEvent],
        *,
        owner: str,
        unstarted: bool = False,
    ) -> bool:
        runs = t.runs.c
        last = max((e.sequence for e in events), default=0)
        conditions = [
            runs.run_id == run_id,
            runs.status.in_((QUEUED, RUNNING)),
            or_(runs.owner == owner, runs.owner.is_(None)),
        ]
        if unstarted:
            conditions.append(runs.checkpoint_count == 0)
        async with self._write() as conn:
            ended = await conn.execute(
                update(t.runs)
                .where(*conditions)
                .values(
                    status=status.value,
                    owner=None,
                    lease_expires_at=None,
                    last_sequence=greatest(runs.last_sequence, last),
                    sequence_reserved=greatest(runs.sequence_reserved, last),
                    updated_at=utc_now(),
                )
            )
            if ended.rowcount != 1:
                return False
            if events:
                # A retry of a write whose commit was not acknowledged finds the run ended
                # and writes nothing (False): the same outcome as a lost race.
                rows = [
                    {"run_id": run_id, "sequence": e.sequence, "data": e.SerializeToString()} for e in events
                ]
                await conn.execute(t.run_events.insert(), rows)
        return True

    async def set_status(self, run_id: str, status: RunStatus) -> RunRow:
        """Raises NotFound for an unknown run (ThreadBusy when forcing RUNNING onto a busy thread)."""
        now = utc_now()
        values: dict[str, Any] = {"status": status.value, "updated_at": now}
        if status.ended:
            values["owner"] = None
            values["lease_expires_at"] = None
        try:
            async with self._write() as conn:
                row = (
                    (
                        await conn.execute(
                            update(t.runs)
                            .where(t.runs.c.run_id == run_id)
                            .values(values)
                            .returning(*t.runs.c)
                        )
                    )
                    .mappings()
                    .one_or_none()
                )
        except IntegrityError:
            raise ThreadBusy(f"the thread of run {run_id} already has a running run") from None
        if row is None:
            raise NotFound(f"run {run_id} not found", reason=Reason.RUN_NOT_FOUND)
        return run_row(row)
