"""`SqlStore`'s retention and accounting: old checkpoints and idle threads pruned, bytes counted."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import delete, func, select

from gateway.store import tables as t
from gateway.store.base import PruneStats, StorageStats
from gateway.store.rows import utc_now
from gateway.store.sqlbase import SqlBase


class RetentionQueries(SqlBase):
    """What the store lets go of, and what it occupies."""

    async def prune(self, keep_last: int, idle_ttl_s: float | None) -> PruneStats:
        keep = max(1, keep_last)
        now = utc_now()
        # Checkpoint indexes are 1..checkpoint_count without gaps (pruning
        # only removes the oldest), so "older than the newest `keep`" is a
        # comparison with the run's counter, not a window function.
        newest = (
            select(t.runs.c.checkpoint_count)
            .where(t.runs.c.run_id == t.checkpoints.c.run_id)
            .scalar_subquery()
        )
        async with self._write() as conn:
            pruned = await conn.execute(delete(t.checkpoints).where(t.checkpoints.c.idx <= newest - keep))
            threads_deleted = 0
            if idle_ttl_s is not None:
                active = (
                    select(t.runs.c.run_id)
                    .where(
                        t.runs.c.thread_id == t.threads.c.thread_id,
                        t.runs.c.status.in_(t.UNENDED_STATUSES),
                    )
                    .exists()
                )
                # ON DELETE CASCADE removes runs, messages, checkpoints, tool
                # results and events (SQLite too: foreign_keys=ON per connection).
                gone = await conn.execute(
                    delete(t.threads).where(
                        t.threads.c.updated_at < now - timedelta(seconds=idle_ttl_s), ~active
                    )
                )
                threads_deleted = gone.rowcount
        return PruneStats(checkpoints_deleted=pruned.rowcount, threads_deleted=threads_deleted)

    async def storage(self, run_id: str) -> StorageStats:
        def total(column: Any, run_column: Any) -> Any:
            return (
                select(func.coalesce(func.sum(func.length(column)), 0))
                .where(run_column == run_id)
                .scalar_subquery()
            )

        sums = select(
            total(t.checkpoints.c.record, t.checkpoints.c.run_id).label("checkpoint_bytes"),
            total(t.messages.c.data, t.messages.c.run_id).label("message_bytes"),
            total(t.run_events.c.data, t.run_events.c.run_id).label("event_bytes"),
            total(t.tool_results.c.data, t.tool_results.c.run_id).label("tool_result_bytes"),
        )
        deltas = (
            select(t.checkpoints.c.delta_bytes)
            .where(t.checkpoints.c.run_id == run_id)
            .order_by(t.checkpoints.c.idx)
        )
        async with self._read() as conn:
            bytes_by_table = (await conn.execute(sums)).mappings().one()
            by_checkpoint = list((await conn.execute(deltas)).scalars().all())
        return StorageStats(
            checkpoint_bytes=int(bytes_by_table["checkpoint_bytes"]),
            message_bytes=int(bytes_by_table["message_bytes"]),
            event_bytes=int(bytes_by_table["event_bytes"]),
            tool_result_bytes=int(bytes_by_table["tool_result_bytes"]),
            by_checkpoint=by_checkpoint,
        )
