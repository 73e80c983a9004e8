"""SQLite writers in one process wait for each other, even when their callers give up.

A write handed to aiosqlite's thread runs to its end whatever the awaiting
task does. If a cancelled writer let go of the writer queue at once, its
transaction would still hold the file's lock while the next writer polled it:
a burst of short client deadlines would bring back the lock polling that the
queue exists to avoid (writers starving past busy_timeout).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import event, text

from gateway.store.dialects import SqliteDialect
from gateway.store.engine import make_engine


@pytest.fixture
async def dialect(sqlite_template: Path, tmp_path: Path) -> SqliteDialect:
    path = tmp_path / "store.db"
    shutil.copyfile(sqlite_template, path)
    return SqliteDialect(make_engine(f"sqlite:///{path}"))


async def test_a_cancelled_writer_holds_the_queue_until_its_transaction_ends(dialect: SqliteDialect) -> None:
    finished = threading.Event()
    order: list[str] = []

    def slow(db: sqlite3.Connection) -> None:
        time.sleep(0.1)
        order.append("slow")
        finished.set()

    def quick(db: sqlite3.Connection) -> None:
        order.append("quick")

    try:
        writer = asyncio.create_task(dialect._transaction(slow))
        await asyncio.sleep(0.02)  # its transaction is under way on the thread
        writer.cancel()
        follower = asyncio.create_task(dialect._transaction(quick))
        with pytest.raises(asyncio.CancelledError):
            await writer
        assert finished.is_set(), "the cancelled caller returned before its transaction ended"
        await follower
        assert order == ["slow", "quick"]
        assert not dialect._lock.locked()
    finally:
        await dialect.engine.dispose()


async def test_a_burst_of_cancelled_writers_leaves_no_writer_waiting_on_the_file_lock(
    dialect: SqliteDialect,
) -> None:
    """Fifty writers cancelled mid-transaction, then one more: its BEGIN IMMEDIATE finds the lock free."""
    inside = 0
    most_inside = 0
    ran = 0
    counter = threading.Lock()

    def body(db: sqlite3.Connection) -> None:
        nonlocal inside, most_inside, ran
        with counter:
            inside += 1
            ran += 1
            most_inside = max(most_inside, inside)
        time.sleep(0.003)
        with counter:
            inside -= 1

    async def hurried() -> None:
        task = asyncio.create_task(dialect._transaction(body))
        await asyncio.sleep(0.001)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    try:
        await dialect._transaction(body)  # the pool's first connection is open
        await asyncio.gather(*(hurried() for _ in range(50)))
        assert inside == 0, "a cancelled writer's transaction outlived its caller"
        assert ran > 1
        assert most_inside == 1
        waited = time.monotonic()
        await dialect._transaction(body)
        assert time.monotonic() - waited < 1.0
    finally:
        await dialect.engine.dispose()


async def test_writes_queued_behind_one_commit_together_each_with_its_own_outcome(
    dialect: SqliteDialect, tmp_path: Path
) -> None:
    """Group commit: three writes queued behind a slow one go to the thread as one transaction.

    Each body looks at the file through a connection of its own: a write made
    by an earlier body of the same transaction is not visible there until the
    batch commits. The middle body fails: its own change is undone, the
    others still commit, and only its caller sees the error.
    """
    path = tmp_path / "store.db"
    seen_by_others: list[int] = []

    def setup(db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE IF NOT EXISTS scratch (label TEXT NOT NULL)")

    def slow(db: sqlite3.Connection) -> str:
        time.sleep(0.1)
        return "slow"

    def insert(db: sqlite3.Connection, label: str) -> str:
        with sqlite3.connect(path) as outside:
            seen_by_others.append(outside.execute("SELECT count(*) FROM scratch").fetchone()[0])
        db.execute("INSERT INTO scratch (label) VALUES (?)", (label,))
        if label == "bad":
            raise ValueError("this write is refused")
        return label

    try:
        await dialect._transaction(setup)
        leader = asyncio.create_task(dialect._transaction(slow))
        await asyncio.sleep(0.02)  # the slow write holds the writer
        queued = [asyncio.create_task(dialect._transaction(insert, label)) for label in ("a", "bad", "c")]
        outcomes = await asyncio.gather(leader, *queued, return_exceptions=True)
        assert outcomes[:2] == ["slow", "a"]
        assert isinstance(outcomes[2], ValueError)
        assert outcomes[3] == "c"
        assert seen_by_others == [0, 0, 0], "the queued writes were committed one by one"
        with sqlite3.connect(path) as outside:
            labels = [row[0] for row in outside.execute("SELECT label FROM scratch ORDER BY rowid")]
        assert labels == ["a", "c"]
    finally:
        await dialect.engine.dispose()


async def test_a_writer_cancelled_while_queued_is_not_written(dialect: SqliteDialect, tmp_path: Path) -> None:
    path = tmp_path / "store.db"

    def setup(db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE IF NOT EXISTS scratch (label TEXT NOT NULL)")

    def slow(db: sqlite3.Connection) -> None:
        time.sleep(0.1)

    def insert(db: sqlite3.Connection, label: str) -> None:
        db.execute("INSERT INTO scratch (label) VALUES (?)", (label,))

    try:
        await dialect._transaction(setup)
        leader = asyncio.create_task(dialect._transaction(slow))
        await asyncio.sleep(0.02)
        kept = asyncio.create_task(dialect._transaction(insert, "kept"))
        dropped = asyncio.create_task(dialect._transaction(insert, "dropped"))
        await asyncio.sleep(0.01)
        dropped.cancel()
        await asyncio.gather(leader, kept)
        with pytest.raises(asyncio.CancelledError):
            await dropped
        with sqlite3.connect(path) as outside:
            labels = [row[0] for row in outside.execute("SELECT label FROM scratch")]
        assert labels == ["kept"]
    finally:
        await dialect.engine.dispose()


async def test_a_write_transaction_cancelled_twice_gives_its_connection_back_with_the_lock_free(
    dialect: SqliteDialect, tmp_path: Path
) -> None:
    """The SQLAlchemy write path (create_run, the heartbeat, cancels) under a client that leaves twice over.

    The writer's BEGIN IMMEDIATE waits for a lock held outside the process;
    its caller is cancelled there, and again while it unwinds. SQLAlchemy
    would treat the first cancellation as a lost connection and close it from
    the event loop, and the second as a reason to stop aiosqlite's thread
    outright; a connection so closed could keep a write transaction, and the
    file's lock, until the garbage collector found it. Instead the statement
    finishes, the transaction is rolled back, the connection goes back to the
    pool, and the next writer starts at once.
    """
    path = tmp_path / "store.db"
    invalidated: list[BaseException | None] = []
    event.listen(dialect.engine.sync_engine, "invalidate", lambda _c, _r, exc: invalidated.append(exc))

    async def write(label: str) -> None:
        async with dialect.write() as conn:
            await conn.execute(text("CREATE TABLE IF NOT EXISTS scratch (label TEXT NOT NULL)"))
            await conn.execute(text("INSERT INTO scratch (label) VALUES (:label)"), {"label": label})

    try:
        await write("first")
        outside = sqlite3.connect(path, isolation_level=None)
        outside.execute("BEGIN IMMEDIATE")
        try:
            writer = asyncio.create_task(write("cut short"))
            await asyncio.sleep(0.2)  # its BEGIN IMMEDIATE waits on the thread
            writer.cancel()
            await asyncio.sleep(0.05)
            writer.cancel()
            await asyncio.sleep(0.05)
        finally:
            outside.execute("ROLLBACK")
            outside.close()
        with pytest.raises(asyncio.CancelledError):
            await writer
        assert invalidated == []
        assert not dialect._lock.locked()
        free = sqlite3.connect(path, isolation_level=None, timeout=0)
        try:
            free.execute("BEGIN IMMEDIATE")  # fails at once if any connection kept the lock
            free.execute("ROLLBACK")
        finally:
            free.close()
        await asyncio.wait_for(write("after"), timeout=2)
        with sqlite3.connect(path) as reader:
            labels = [row[0] for row in reader.execute("SELECT label FROM scratch ORDER BY rowid")]
        assert labels == ["first", "after"]
    finally:
        await dialect.engine.dispose()
