"""Initial schema: threads, runs, messages, checkpoints, tool results, run events.

Revision ID: 0001
Revises:
Create Date: 2025-01-01

Written out by hand rather than from `gateway.store.tables`: a revision must
keep creating exactly this schema whatever the models become later.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# SQLite only makes INTEGER PRIMARY KEY an autoincrementing rowid alias.
_position = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _ts(name: str, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "threads",
        sa.Column("thread_id", sa.Text(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        _ts("created_at"),
        _ts("updated_at"),
        sa.Column("message_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.PrimaryKeyConstraint("thread_id", name="pk_threads"),
    )
    op.create_index("ix_threads_user_id", "threads", ["user_id"])

    op.create_table(
        "runs",
        sa.Column("run_id", sa.Text(), nullable=False),
        sa.Column("thread_id", sa.Text(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("request", sa.LargeBinary(), nullable=False),
        sa.Column("owner", sa.Text(), nullable=True),
        _ts("lease_expires_at", nullable=True),
        sa.Column("cancel_requested", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("checkpoint_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("last_sequence", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        _ts("created_at"),
        _ts("updated_at"),
        sa.ForeignKeyConstraint(
            ["thread_id"], ["threads.thread_id"], name="fk_runs_thread_id_threads", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", name="pk_runs"),
    )
    op.create_index(
        "uq_runs_thread_running",
        "runs",
        ["thread_id"],
        unique=True,
        postgresql_where=sa.text("status = 'running'"),
        sqlite_where=sa.text("status = 'running'"),
    )
    op.create_index("ix_runs_status_lease", "runs", ["status", "lease_expires_at"])
    op.create_index("ix_runs_thread_created", "runs", ["thread_id", "created_at"])

    op.create_table(
        "messages",
        sa.Column("thread_id", sa.Text(), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Text(), nullable=True),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["thread_id"], ["threads.thread_id"], name="fk_messages_thread_id_threads", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("thread_id", "idx", name="pk_messages"),
    )
    op.create_index("ix_messages_run_id", "messages", ["run_id"])

    op.create_table(
        "checkpoints",
        sa.Column("position", _position, autoincrement=True, nullable=False),
        sa.Column("run_id", sa.Text(), nullable=False),
        sa.Column("thread_id", sa.Text(), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("record", sa.LargeBinary(), nullable=False),
        sa.Column("delta_bytes", sa.Integer(), nullable=False),
        _ts("created_at"),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.run_id"], name="fk_checkpoints_run_id_runs", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("position", name="pk_checkpoints"),
        sa.UniqueConstraint("run_id", "idx", name="uq_checkpoints_run_id_idx"),
    )
    op.create_index("ix_checkpoints_thread_position", "checkpoints", ["thread_id", "position"])

    op.create_table(
        "tool_results",
        sa.Column("position", _position, autoincrement=True, nullable=False),
        sa.Column("run_id", sa.Text(), nullable=False),
        sa.Column("tool_call_id", sa.Text(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.run_id"], name="fk_tool_results_run_id_runs", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("position", name="pk_tool_results"),
        sa.UniqueConstraint("run_id", "tool_call_id", name="uq_tool_results_run_id_tool_call_id"),
    )

    op.create_table(
        "run_events",
        sa.Column("run_id", sa.Text(), nullable=False),
        sa.Column("sequence", sa.BigInteger(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.run_id"], name="fk_run_events_run_id_runs", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", "sequence", name="pk_run_events"),
    )


def downgrade() -> None:
    op.drop_table("run_events")
    op.drop_table("tool_results")
    op.drop_table("checkpoints")
    op.drop_table("messages")
    op.drop_table("runs")
    op.drop_table("threads")
