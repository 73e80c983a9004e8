"""The write hot path: fixed SQL handed straight to the driver, bypassing SQLAlchemy.

write_checkpoint runs at every node transition and record_tool_results at
every step with tools, so their cost is per-step gateway CPU. Built with
SQLAlchemy Core they cost milliseconds per call: statement construction,
cache-key generation and compilation, result processing, and a greenlet
switch plus a driver round trip per statement. Instead each is a fixed SQL
text (nothing to build or compile per call) handed straight to the driver of
a pooled connection (`Dialect.driver` in `gateway.store.dialects`):

- Postgres: ONE statement, data-modifying CTEs, so one round trip and an
  implicit transaction (the connection stays in autocommit: nothing begun
  through SQLAlchemy). All CTEs see the same snapshot, so positions come from
  RETURNING values, never from reads; and every insert selects FROM the
  ownership CTE, so when the run UPDATE matches nothing (LeaseLost) nothing
  at all is written. asyncpg keeps the statement prepared per connection.
- SQLite: the whole transaction is one function run on the aiosqlite
  connection's own thread (one hop instead of one per statement); inside
  it, statements cost microseconds. Values are stored exactly as the
  SQLAlchemy types store them (UtcDateTime: naive UTC text with
  microseconds), so both paths read and compare each other's rows.

What that costs: the SQL spells out `tables`' columns by hand (the
conformance suite runs every statement on both backends, so drift fails
there); errors arrive as the driver's own (asyncpg / sqlite3) rather than
wrapped by SQLAlchemy, which no caller distinguishes; and on SQLite a call
cancelled after handing its transaction to the thread still completes it,
where Postgres may roll back, so after a cancellation either outcome is
possible (as it always was for a cancellation that raced the commit).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from gateway.store.rows import RUNNING

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class StepWrite:
    """One write_checkpoint, serialized once whichever backend then writes it."""

    run_id: str
    owner: str
    """Who must own the RUNNING run for anything to be written."""
    last_sequence: int
    status: str
    new_owner: str | None
    lease_expires_at: datetime | None
    now: datetime
    messages: list[bytes]
    record: bytes
    delta_bytes: int
    events: list[tuple[int, bytes]]
    """(sequence, serialized event) pairs."""
    sequence_reserved: int
    tool_results: list[tuple[str, bytes]]
    """(storable tool call id, serialized result) pairs, recorded as `record_tool_results` does."""
    index: int | None
    """The checkpoint number this write becomes, or None: written only at that count (see
    `CheckpointWrite.index`)."""


_RUN_COLUMNS = (
    "run_id, thread_id, user_id, status, request, owner, lease_expires_at,"
    " cancel_requested, checkpoint_count, last_sequence, created_at, updated_at, sequence_reserved"
)


def _pg_insert_tool_results(call_ids: str, data: str) -> str:
    """The CTE body recording tool results (parameters `call_ids` text[] and `data` bytea[]) of the run
    in `owned`: in the batch's order (`position`), the first write of a call id winning (a repeat
    within the batch too, as DO NOTHING skips rows the same statement inserted)."""
    return f"""INSERT INTO tool_results (run_id, tool_call_id, data)
    SELECT owned.run_id, r.tool_call_id, r.data
    FROM owned, unnest({call_ids}::text[], {data}::bytea[]) WITH ORDINALITY AS r(tool_call_id, data, ord)
    ORDER BY r.ord
    ON CONFLICT (run_id, tool_call_id) DO NOTHING"""


PG_WRITE_CHECKPOINT = f"""
WITH owned AS (
    UPDATE runs
    SET checkpoint_count = checkpoint_count + 1,
        last_sequence = GREATEST(last_sequence, $3::bigint),
        sequence_reserved = CASE WHEN $4::text = '{RUNNING}'
            THEN GREATEST(sequence_reserved, $13::bigint) ELSE GREATEST(last_sequence, $3::bigint) END,
        status = $4::text,
        owner = $5::text,
        lease_expires_at = $6::timestamptz,
        updated_at = $7::timestamptz
    WHERE run_id = $1::text AND owner = $2::text AND status = '{RUNNING}'
        AND ($16::integer IS NULL OR checkpoint_count = $16::integer - 1)
    RETURNING {_RUN_COLUMNS}
), thread AS (
    UPDATE threads
    SET message_count = threads.message_count + cardinality($8::bytea[]),
        updated_at = $7::timestamptz
    FROM owned
    WHERE threads.thread_id = owned.thread_id
    RETURNING threads.thread_id, threads.message_count
), new_messages AS (
    INSERT INTO messages (thread_id, idx, run_id, data)
    SELECT thread.thread_id, thread.message_count - cardinality($8::bytea[]) + m.ord - 1, $1::text, m.data
    FROM thread, unnest($8::bytea[]) WITH ORDINALITY AS m(data, ord)
), new_checkpoint AS (
    INSERT INTO checkpoints (run_id, thread_id, idx, record, delta_bytes, created_at)
    SELECT owned.run_id, owned.thread_id, owned.checkpoint_count, $9::bytea, $10::integer, $7::timestamptz
    FROM owned
), new_events AS (
    INSERT INTO run_events (run_id, sequence, data)
    SELECT owned.run_id, e.sequence, e.data
    FROM owned, unnest($11::bigint[], $12::bytea[]) AS e(sequence, data)
    ON CONFLICT (run_id, sequence) DO NOTHING
), new_tool_results AS (
    {_pg_insert_tool_results("$14", "$15")}
)
SELECT {_RUN_COLUMNS} FROM owned
"""
"""$1 run_id, $2 owner, $3 last_sequence, $4 status, $5 new owner, $6 lease_expires_at, $7 now,
$8 message data, $9 record, $10 delta_bytes, $11 event sequences, $12 event data,
$13 sequence_reserved (the owner's new reservation; a run that ends or pauses keeps none beyond its
last event, so Resume numbers on without a gap), $14 tool call ids and $15 result data (recorded
as PG_RECORD_TOOL_RESULTS records them), $16 the checkpoint number it becomes (NULL: any)."""

PG_RECORD_TOOL_RESULTS = f"""
WITH owned AS (
    UPDATE runs
    SET lease_expires_at = $3::timestamptz, updated_at = $4::timestamptz
    WHERE run_id = $1::text AND owner = $2::text AND status = '{RUNNING}'
    RETURNING run_id
), recorded AS (
    {_pg_insert_tool_results("$5", "$6")}
)
SELECT count(*) FROM owned
"""
"""$1 run_id, $2 owner, $3 lease_expires_at, $4 now, $5 tool call ids, $6 result data."""

_SQLITE_CLAIM_STEP = f"""
UPDATE runs
SET checkpoint_count = checkpoint_count + 1, last_sequence = max(last_sequence, ?1),
    sequence_reserved = CASE WHEN ?2 = '{RUNNING}'
        THEN max(sequence_reserved, ?8) ELSE max(last_sequence, ?1) END,
    status = ?2, owner = ?3, lease_expires_at = ?4, updated_at = ?5
WHERE run_id = ?6 AND owner = ?7 AND status = '{RUNNING}' AND (?9 IS NULL OR checkpoint_count = ?9 - 1)
RETURNING {_RUN_COLUMNS}
"""
_SQLITE_BUMP_THREAD = (
    "UPDATE threads SET message_count = message_count + ?, updated_at = ? WHERE thread_id = ?"
    " RETURNING message_count"
)
_SQLITE_INSERT_MESSAGE = "INSERT INTO messages (thread_id, idx, run_id, data) VALUES (?, ?, ?, ?)"
_SQLITE_INSERT_CHECKPOINT = (
    "INSERT INTO checkpoints (run_id, thread_id, idx, record, delta_bytes, created_at)"
    " VALUES (?, ?, ?, ?, ?, ?)"
)
_SQLITE_INSERT_EVENT = (
    "INSERT INTO run_events (run_id, sequence, data) VALUES (?, ?, ?)"
    " ON CONFLICT (run_id, sequence) DO NOTHING"
)
_SQLITE_RENEW_LEASE = (
    "UPDATE runs SET lease_expires_at = ?, updated_at = ?"
    f" WHERE run_id = ? AND owner = ? AND status = '{RUNNING}'"
)
_SQLITE_INSERT_TOOL_RESULT = (
    "INSERT INTO tool_results (run_id, tool_call_id, data) VALUES (?, ?, ?)"
    " ON CONFLICT (run_id, tool_call_id) DO NOTHING"
)


def _named_rows(db: sqlite3.Connection, sql: str, parameters: tuple[Any, ...]) -> list[sqlite3.Row]:
    """Every row of `sql`, each readable by column name.

    fetchall: a statement left unfinished would hold up COMMIT.
    """
    cursor = db.cursor()
    cursor.row_factory = sqlite3.Row
    rows: list[sqlite3.Row] = cursor.execute(sql, parameters).fetchall()
    return rows


def sqlite_write_checkpoint(
    db: sqlite3.Connection,
    claim: tuple[Any, ...],
    now: str,
    run_id: str,
    messages: list[bytes],
    checkpoint: tuple[bytes, int, str],
    events: list[tuple[str, int, bytes]],
    tool_results: list[tuple[str, str, bytes]],
) -> dict[str, Any] | None:
    """write_checkpoint's statements (in the connection's thread, inside `SqliteDialect._transaction`).

    Returns the updated run's `_RUN_COLUMNS` by name, or None (and writes
    nothing) when the caller does not own the run.
    """
    claimed = _named_rows(db, _SQLITE_CLAIM_STEP, claim)
    if not claimed:
        return None
    run = claimed[0]
    thread_id, checkpoint_idx = run["thread_id"], run["checkpoint_count"]
    (thread,) = _named_rows(db, _SQLITE_BUMP_THREAD, (len(messages), now, thread_id))
    message_count = thread["message_count"]
    if messages:
        first = message_count - len(messages)
        db.executemany(
            _SQLITE_INSERT_MESSAGE,
            [(thread_id, first + i, run_id, data) for i, data in enumerate(messages)],
        )
    record, delta_bytes, created_at = checkpoint
    db.execute(
        _SQLITE_INSERT_CHECKPOINT, (run_id, thread_id, checkpoint_idx, record, delta_bytes, created_at)
    )
    if events:
        db.executemany(_SQLITE_INSERT_EVENT, events)
    if tool_results:
        db.executemany(_SQLITE_INSERT_TOOL_RESULT, tool_results)
    return dict(zip(run.keys(), run, strict=True))


def sqlite_record_tool_results(
    db: sqlite3.Connection, renew: tuple[str, str, str, str], rows: list[tuple[str, str, bytes]]
) -> bool:
    """record_tool_results' statements; False (nothing written) when the caller does not own the run."""
    if db.execute(_SQLITE_RENEW_LEASE, renew).rowcount == 0:
        return False
    db.executemany(_SQLITE_INSERT_TOOL_RESULT, rows)
    return True


def sqlite_in_transaction(db: sqlite3.Connection, body: Callable[..., _T], *args: Any) -> _T:
    """Run `body(db, *args)` in a BEGIN IMMEDIATE transaction: commit, or roll back on any error."""
    db.execute("BEGIN IMMEDIATE")
    try:
        result = body(db, *args)
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return result


def sqlite_in_one_transaction(
    db: sqlite3.Connection, writes: Sequence[tuple[Callable[..., Any], tuple[Any, ...]]]
) -> list[tuple[bool, Any]]:
    """Several writes' bodies in one BEGIN IMMEDIATE … COMMIT, each in its own savepoint.

    Per write `(True, result)`, or `(False, exception)` for a body that raised:
    its savepoint is rolled back and the others still commit, so each caller
    sees what a transaction of its own would have given it. An error after
    which SQLite rolled the whole transaction back (a full disk, an I/O error)
    fails them all: it is raised.
    """
    db.execute("BEGIN IMMEDIATE")
    outcomes: list[tuple[bool, Any]] = []
    try:
        for body, args in writes:
            db.execute("SAVEPOINT one_write")
            try:
                result = body(db, *args)
            except Exception as exc:
                if not db.in_transaction:
                    raise
                db.execute("ROLLBACK TO one_write")
                db.execute("RELEASE one_write")
                outcomes.append((False, exc))
            else:
                db.execute("RELEASE one_write")
                outcomes.append((True, result))
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return outcomes


async def run_to_completion(cleanup: Awaitable[_T]) -> _T:
    """Await `cleanup` to its end even if the caller is cancelled meanwhile (then re-raise that).

    What SQLAlchemy's AsyncConnection does when closing: a checkin abandoned
    halfway would leave the pool to invalidate the connection and log an error.
    """
    task = asyncio.ensure_future(cleanup)
    cancelled: asyncio.CancelledError | None = None
    while True:
        try:
            result = await asyncio.shield(task)
        except asyncio.CancelledError as err:
            if task.done():
                raise
            cancelled = err
        else:
            break
    if cancelled is not None:
        raise cancelled
    return result
