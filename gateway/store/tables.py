"""The schema as SQLAlchemy models, used by `SqlStore` to build its statements.

The migrations under `migrations/versions` create the same schema by hand (a
migration must not change when this module does); `tests/store/test_migrations`
compares the two so they cannot drift apart.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    Dialect,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
"""Deterministic constraint names, so later migrations can refer to them on both backends."""

RUNNING = "running"
ACTIVE_STATUSES = ("queued", "running")
UNENDED_STATUSES = (*ACTIVE_STATUSES, "paused")
"""Statuses of a run that is not over: retention never deletes a thread holding one."""

# SQLite only turns an INTEGER PRIMARY KEY into a rowid alias (and so an
# autoincrementing key) when the type is spelled exactly INTEGER.
AutoBigInt = BigInteger().with_variant(Integer, "sqlite")


class UtcDateTime(TypeDecorator[datetime]):
    """A timestamp that is always timezone-aware UTC in Python.

    Postgres keeps `timestamptz`; SQLite has no time zones and stores naive
    text, so values are normalised to UTC on the way in and tagged UTC on the
    way out. Lease comparisons then mean the same on both backends.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the store; use datetime.now(UTC)")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        assert isinstance(value, datetime)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Thread(Base):
    __tablename__ = "threads"

    thread_id: Mapped[str] = mapped_column(Text, primary_key=True)
    user_id: Mapped[str] = mapped_column(Text, index=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime)
    message_count: Mapped[int] = mapped_column(Integer, server_default=text("0"))


class Run(Base):
    __tablename__ = "runs"
    __table_args__ = (
        # The database, not the caller, guarantees one RUNNING run per thread.
        Index(
            "uq_runs_thread_running",
            "thread_id",
            unique=True,
            postgresql_where=text("status = 'running'"),
            sqlite_where=text("status = 'running'"),
        ),
        Index("ix_runs_status_lease", "status", "lease_expires_at"),
        Index("ix_runs_thread_created", "thread_id", "created_at"),
        Index("ux_runs_user_request", "user_id", "request_id", unique=True),
    )

    run_id: Mapped[str] = mapped_column(Text, primary_key=True)
    thread_id: Mapped[str] = mapped_column(Text, ForeignKey("threads.thread_id", ondelete="CASCADE"))
    user_id: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(Text)
    request: Mapped[bytes] = mapped_column(LargeBinary)
    owner: Mapped[str | None] = mapped_column(Text)
    lease_expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, server_default=text("false"))
    checkpoint_count: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    last_sequence: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime)
    sequence_reserved: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))
    request_id: Mapped[str | None] = mapped_column(Text)
    resume_request_id: Mapped[str | None] = mapped_column(Text)
    resume_sequence: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))
    """Event numbers up to here may have been handed out by an owner (revision 0003)."""


class Message(Base):
    __tablename__ = "messages"
    __table_args__ = (PrimaryKeyConstraint("thread_id", "idx"),)

    thread_id: Mapped[str] = mapped_column(Text, ForeignKey("threads.thread_id", ondelete="CASCADE"))
    idx: Mapped[int] = mapped_column(Integer)
    """0-based, contiguous per thread: the thread's message_count before the append."""
    run_id: Mapped[str | None] = mapped_column(Text, index=True)
    data: Mapped[bytes] = mapped_column(LargeBinary)


class Checkpoint(Base):
    __tablename__ = "checkpoints"
    __table_args__ = (
        UniqueConstraint("run_id", "idx"),
        Index("ix_checkpoints_thread_position", "thread_id", "position"),
    )

    position: Mapped[int] = mapped_column(AutoBigInt, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(Text, ForeignKey("runs.run_id", ondelete="CASCADE"))
    thread_id: Mapped[str] = mapped_column(Text)
    idx: Mapped[int] = mapped_column(Integer)
    record: Mapped[bytes] = mapped_column(LargeBinary)
    delta_bytes: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)


class ToolResult(Base):
    __tablename__ = "tool_results"
    __table_args__ = (UniqueConstraint("run_id", "tool_call_id"),)

    position: Mapped[int] = mapped_column(AutoBigInt, primary_key=True, autoincrement=True)
    """Recording order, which `tool_results()` returns."""
    run_id: Mapped[str] = mapped_column(Text, ForeignKey("runs.run_id", ondelete="CASCADE"))
    tool_call_id: Mapped[str] = mapped_column(Text)
    data: Mapped[bytes] = mapped_column(LargeBinary)


class RunEvent(Base):
    __tablename__ = "run_events"
    __table_args__ = (PrimaryKeyConstraint("run_id", "sequence"),)

    run_id: Mapped[str] = mapped_column(Text, ForeignKey("runs.run_id", ondelete="CASCADE"))
    sequence: Mapped[int] = mapped_column(BigInteger)
    data: Mapped[bytes] = mapped_column(LargeBinary)


class Memory(Base):
    """Per-user long-term memory (revision 0002)."""

    __tablename__ = "memories"

    memory_id: Mapped[str] = mapped_column(Text, primary_key=True)
    user_id: Mapped[str] = mapped_column(Text, index=True)
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)


class Secret(Base):
    """Random values shared by every gateway on the database, created on first use (revision 0006)."""

    __tablename__ = "secrets"

    name: Mapped[str] = mapped_column(Text, primary_key=True)
    value: Mapped[bytes] = mapped_column(LargeBinary)


threads = cast(Table, Thread.__table__)
runs = cast(Table, Run.__table__)
messages = cast(Table, Message.__table__)
checkpoints = cast(Table, Checkpoint.__table__)
tool_results = cast(Table, ToolResult.__table__)
run_events = cast(Table, RunEvent.__table__)
memories = cast(Table, Memory.__table__)
secrets = cast(Table, Secret.__table__)
