"""Database rows as the Store's row dataclasses, and the small SQL expressions SqlStore shares."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import BigInteger, ColumnElement, FromClause, RowMapping, case, literal, or_

from agentloop.internal.v1 import checkpoint_pb2
from agentloop.v1 import agent_pb2
from gateway.store import tables as t
from gateway.store.base import CheckpointRow, RunRow, RunStatus, ThreadRow
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


def run_row(row: RowMapping) -> RunRow:
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


def sqlite_text(value: datetime) -> str:
    """A timestamp as UtcDateTime stores it on SQLite: naive UTC, always with microseconds.

    The format matters beyond reading back: lease comparisons on SQLite
    compare these strings.
    """
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(" ", "microseconds")


def _sqlite_datetime(value: str) -> datetime:
    return datetime.fromisoformat(value).replace(tzinfo=UTC)


def sqlite_run_row(values: Sequence[Any]) -> RunRow:
    """A RunRow from a `hotpath._RUN_COLUMNS` tuple as sqlite3 returns it (text timestamps, 0/1 booleans)."""
    return RunRow(
        run_id=values[0],
        thread_id=client_thread_id(values[1]),
        user_id=values[2],
        status=RunStatus(values[3]),
        request=bytes(values[4]),
        owner=values[5],
        lease_expires_at=None if values[6] is None else _sqlite_datetime(values[6]),
        cancel_requested=bool(values[7]),
        checkpoint_count=values[8],
        last_sequence=values[9],
        created_at=_sqlite_datetime(values[10]),
        updated_at=_sqlite_datetime(values[11]),
        sequence_reserved=values[12],
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
