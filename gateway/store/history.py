"""`SqlStore`'s history of a run: checkpoints, tool results and events, written and read back.

`write_checkpoint` and `record_tool_results` run once or more per step of
every run, so they leave SQLAlchemy's statement machinery for fixed SQL handed
to the driver (`gateway.store.hotpath`, through the store's dialect).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from agentloop.kernel.errors import NotFound, Reason
from agentloop.v1 import agent_pb2, common_pb2
from gateway.store import tables as t
from gateway.store.base import CheckpointRow, CheckpointWrite, LeaseLost, RunRow
from gateway.store.hotpath import StepWrite
from gateway.store.rows import RUNNING, checkpoint_row, greatest, run_row, stored_event, utc_now
from gateway.store.scope import thread_key
from gateway.store.sqlbase import SqlBase
from gateway.store.storable import storable


class HistoryQueries(SqlBase):
    """What a run wrote as it went, from which it is rebuilt and replayed."""

    async def write_checkpoint(self, write: CheckpointWrite) -> RunRow:
        """One node transition: the run's counters and lease, the thread's messages, the record, the events.

        The hottest write of a run, so it skips SQLAlchemy's statement
        machinery (see `gateway.store.hotpath`): Postgres gets it as one
        statement, one round trip; SQLite as one call into the connection's
        thread. The ownership check comes first and locks the run row, so a
        concurrent claim either happened before (nothing written: LeaseLost)
        or waits for this commit.
        """
        now = utc_now()
        record = write.record.SerializeToString()
        message_data = [m.SerializeToString() for m in write.new_messages]
        events = write.events
        last_sequence = write.record.last_sequence
        for e in events:
            if e.sequence > last_sequence:
                last_sequence = e.sequence
        # The run is RUNNING under write.owner or nothing is written, so
        # "unchanged" can be spelled with the values the WHERE clause checks:
        # one fixed statement whatever `write.status` is.
        status: str = RUNNING
        owner: str | None = write.owner
        lease_expires_at: datetime | None = now + timedelta(seconds=self.lease_s)
        if write.status is not None:
            status = write.status.value
            if write.status.ended:
                owner, lease_expires_at = None, None
        step = StepWrite(
            run_id=write.run_id,
            owner=write.owner,
            last_sequence=last_sequence,
            status=status,
            new_owner=owner,
            lease_expires_at=lease_expires_at,
            now=now,
            messages=message_data,
            record=record,
            delta_bytes=len(record) + sum(map(len, message_data)),
            events=[(e.sequence, e.SerializeToString()) for e in events],
            sequence_reserved=write.sequence_reserved,
            tool_results=_storable_results(write.tool_results),
            index=write.index,
        )
        row = await self._dialect.write_step(step)
        if row is None:
            if write.index is not None and (done := await self._written_before(write, record)):
                return done
            raise LeaseLost(f"run {write.run_id} is not running under owner {write.owner}")
        return row

    async def _written_before(self, write: CheckpointWrite, record: bytes) -> RunRow | None:
        """The run, when checkpoint `write.index` is this very write (stored by an earlier attempt)."""
        cps = t.checkpoints.c
        stmt = select(cps.record).where(cps.run_id == write.run_id, cps.idx == write.index)
        async with self._read() as conn:
            stored = (await conn.execute(stmt)).scalar_one_or_none()
            if stored != record:
                return None
            row = (await conn.execute(select(t.runs).where(t.runs.c.run_id == write.run_id))).mappings().one()
        return run_row(row)

    async def _insert_events(
        self, conn: AsyncConnection, run_id: str, events: Sequence[agent_pb2.RunEvent]
    ) -> None:
        if not events:
            return
        # A re-sent sequence (a resumed run replaying its tail) keeps the first copy.
        await conn.execute(
            self._dialect.insert_ignoring(t.run_events, "run_id", "sequence"),
            [{"run_id": run_id, "sequence": e.sequence, "data": e.SerializeToString()} for e in events],
        )

    async def record_tool_result(self, run_id: str, owner: str, result: common_pb2.ToolResult) -> None:
        """A batch of one: a caller recording each call as it finishes pays one transaction per call."""
        await self.record_tool_results(run_id, owner, (result,))

    async def record_tool_results(
        self, run_id: str, owner: str, results: Sequence[common_pb2.ToolResult]
    ) -> None:
        """The lease renewal and every insert in one transaction, on the hot path like `write_checkpoint`.

        One statement (one round trip) on Postgres, one call into the
        connection's thread on SQLite, whatever the batch size: a step's
        parallel calls cost about what one call does. The call id column, the
        first-write-wins key, holds the id's storable form (a model may emit
        NUL, which Postgres text refuses); the result itself keeps the id as is.
        """
        if not results:
            return
        now = utc_now()
        owned = await self._dialect.record_tool_results(
            run_id, owner, now + timedelta(seconds=self.lease_s), now, _storable_results(results)
        )
        if not owned:
            raise LeaseLost(f"run {run_id} is not running under owner {owner}")

    async def tool_results(self, run_id: str) -> dict[str, common_pb2.ToolResult]:
        stmt = (
            select(t.tool_results.c.data)
            .where(t.tool_results.c.run_id == run_id)
            .order_by(t.tool_results.c.position)
        )
        async with self._read() as conn:
            rows = (await conn.execute(stmt)).scalars().all()
        # Keyed by the id inside the result, not the column: the column holds
        # its storable form (see record_tool_results).
        results = [common_pb2.ToolResult.FromString(data) for data in rows]
        return {r.tool_call_id: r for r in results}

    async def latest_checkpoint(self, run_id: str) -> CheckpointRow | None:
        stmt = (
            select(t.checkpoints)
            .where(t.checkpoints.c.run_id == run_id)
            .order_by(t.checkpoints.c.idx.desc())
            .limit(1)
        )
        async with self._read() as conn:
            row = (await conn.execute(stmt)).mappings().one_or_none()
        return None if row is None else checkpoint_row(row)

    async def get_checkpoint(self, run_id: str, index: int) -> CheckpointRow | None:
        stmt = select(t.checkpoints).where(t.checkpoints.c.run_id == run_id, t.checkpoints.c.idx == index)
        async with self._read() as conn:
            row = (await conn.execute(stmt)).mappings().one_or_none()
        return None if row is None else checkpoint_row(row)

    async def list_checkpoints(
        self, thread_id: str, run_id: str | None, after_position: int, limit: int, *, user_id: str
    ) -> list[CheckpointRow]:
        cps = t.checkpoints.c
        stmt = (
            select(t.checkpoints)
            .where(cps.thread_id == thread_key(user_id, thread_id), cps.position > after_position)
            .order_by(cps.position)
            .limit(limit)
        )
        if run_id is not None:
            stmt = stmt.where(cps.run_id == run_id)
        async with self._read() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [checkpoint_row(row) for row in rows]

    async def events(self, run_id: str, after_sequence: int, limit: int = 1000) -> list[agent_pb2.RunEvent]:
        ev = t.run_events.c
        stmt = (
            select(ev.data)
            .where(ev.run_id == run_id, ev.sequence > after_sequence)
            .order_by(ev.sequence)
            .limit(limit)
        )
        async with self._read() as conn:
            rows = (await conn.execute(stmt)).scalars().all()
        return [stored_event(data) for data in rows]

    async def append_events(self, run_id: str, events: Sequence[agent_pb2.RunEvent]) -> None:
        """Raises NotFound for an unknown run; keeps the run's last_sequence in step."""
        if not events:
            return
        async with self._write() as conn:
            touched = await conn.execute(
                update(t.runs)
                .where(t.runs.c.run_id == run_id)
                .values(last_sequence=greatest(t.runs.c.last_sequence, max(e.sequence for e in events)))
            )
            if touched.rowcount == 0:
                raise NotFound(f"run {run_id} not found", reason=Reason.RUN_NOT_FOUND)
            await self._insert_events(conn, run_id, events)


def _storable_results(results: Sequence[common_pb2.ToolResult]) -> list[tuple[str, bytes]]:
    """(call id column, result data) rows: the first-write-wins key holds the id's storable form."""
    return [(storable(r.tool_call_id), r.SerializeToString()) for r in results]
