"""Client request ids on runs: a retried Run, Invoke or Resume attaches to what it started.

Revision ID: 0005_request_id
Revises: 0004_sequence_reserved
Create Date: 2025-01-04

`runs.request_id` holds the idempotency key a client chose (RunRequest.
request_id); a unique index on (user_id, request_id) lets the database, not a
check-then-insert, decide which of two concurrent retries creates the run.
Rows without a key hold NULL, which unique indexes of both backends treat as
distinct, so runs without a key never collide. `resume_request_id` and
`resume_sequence` remember the key of the Resume that last continued the run
and the event number its stream started after.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005_request_id"
down_revision: str | None = "0004_sequence_reserved"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# A plain ADD COLUMN on both backends: a SQLite batch migration would copy and
# drop the runs table, and dropping it cascades to every checkpoint and event.


def upgrade() -> None:
    op.add_column("runs", sa.Column("request_id", sa.Text(), nullable=True))
    op.create_index("ux_runs_user_request", "runs", ["user_id", "request_id"], unique=True)
    op.add_column("runs", sa.Column("resume_request_id", sa.Text(), nullable=True))
    op.add_column(
        "runs", sa.Column("resume_sequence", sa.BigInteger(), server_default=sa.text("0"), nullable=False)
    )


def downgrade() -> None:
    op.drop_column("runs", "resume_sequence")
    op.drop_column("runs", "resume_request_id")
    op.drop_index("ux_runs_user_request", table_name="runs")
    op.drop_column("runs", "request_id")
