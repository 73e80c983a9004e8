"""Database rows as the Store's row dataclasses, and the small SQL expressions SqlStore shares."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import BigInteger, ColumnElement, FromClause, RowMapping, case, literal, or_

from agentloop.internal.v1 import checkpoint_pb2
from agentloop.v1 import agent_pb2
from gateway.store import tables as t
from gateway.store.base import CheckpointRow, Memory, RunRow, RunStatus, ThreadRow
from gateway.store.scope import client_thread_id

RUNNING = RunStatus.RUNNING.value
QUEUED = RunStatus.QUEUED.value
CANCELLED = RunStatus.CANCELLED.value


def utc_now() -> datetime:
    # Lease times come from the application's clock on both backends, so a
    # lease means the same whether the database is Postgres or SQLite.
    return datetime.now(UTC)


def greatest(column: ColumnElement[int], value: int) -> ColumnElement[int]:
    """max(column, value) in SQL both backends share (GREATEST is Postgres-only)."""
    bound = literal(value, BigInteger())
    return case((column > bound, column), else_=bound)


def expired(now: datetime, runs: FromClause = t.runs) -> ColumnElement[bool]:
    return or_(runs.c.lease_expires_at.is_(None), runs.c.lease_expires_at < now)


def thread_row(row: RowMapping) -> ThreadRow:
    return ThreadRow(
        thread_id=client_thread_id(row["thread_id"]),
        user_id=row["user_id"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        message_count=row["message_count"],
    )


def run_row(row: Mapping[Any, Any]) -> RunRow:
    """A RunRow from a `runs` row by column name (SQLAlchemy's RowMapping, asyncpg's Record, a dict)."""
    return RunRow(
        run_id=row["run_id"],
        thread_id=client_thread_id(row["thread_id"]),
        user_id=row["user_id"],
        status=RunStatus(row["status"]),
        request=bytes(row["request"]),
        owner=row["owner"],
        lease_expires_at=row["lease_expires_at"],
        cancel_requested=bool(row["cancel_requested"]),
        checkpoint_count=row["checkpoint_count"],
        last_sequence=row["last_sequence"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        sequence_reserved=row["sequence_reserved"],
        request_id=row.get("request_id"),
        resume_request_id=row.get("resume_request_id"),
        resume_sequence=row.get("resume_sequence") or 0,
    )


def checkpoint_row(row: RowMapping) -> CheckpointRow:
    return CheckpointRow(
        run_id=row["run_id"],
        thread_id=client_thread_id(row["thread_id"]),
        index=row["idx"],
        record=checkpoint_pb2.CheckpointRecord.FromString(row["record"]),
        delta_bytes=row["delta_bytes"],
        created_at=row["created_at"],
        position=row["position"],
    )


def memory_row(row: RowMapping) -> Memory:
    return Memory(
        memory_id=row["memory_id"], user_id=row["user_id"], text=row["text"], created_at=row["created_at"]
    )


def sqlite_text(value: datetime) -> str:
    """A timestamp as UtcDateTime stores it on SQLite: naive UTC, always with microseconds.

    The format matters beyond reading back: lease comparisons on SQLite
    compare these strings.
    """
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(" ", "microseconds")


def _sqlite_datetime(value: str) -> datetime:
    return datetime.fromisoformat(value).replace(tzinfo=UTC)


def sqlite_run_row(row: Mapping[str, Any]) -> RunRow:
    """A RunRow from `hotpath._RUN_COLUMNS` as sqlite3 returns them: timestamps are text there."""
    lease_expires_at = row["lease_expires_at"]
    return run_row(
        {
            **row,
            "lease_expires_at": None if lease_expires_at is None else _sqlite_datetime(lease_expires_at),
            "created_at": _sqlite_datetime(row["created_at"]),
            "updated_at": _sqlite_datetime(row["updated_at"]),
        }
    )


def stored_event(data: bytes) -> agent_pb2.RunEvent:
    """A stored event as the contract sends it, without fields the contract no longer has.

    Events stored before v1 took its final shape may carry removed fields (a
    final event's whole thread, `RunFinal` field 3). Protobuf keeps unknown
    fields and would send them on to every Watch; dropped here, a replay stays
    as bounded as a live run.
    """
    event = agent_pb2.RunEvent.FromString(data)
    event.DiscardUnknownFields()
    return event
