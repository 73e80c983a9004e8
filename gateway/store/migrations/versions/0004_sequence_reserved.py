"""Event numbers reserved by a run's owner, so a number is never handed out twice.

Revision ID: 0004_sequence_reserved
Revises: 0003_thread_scope
Create Date: 2025-01-03

The owner of a run durably reserves blocks of event sequence numbers before
it emits them; a gateway taking the run over numbers its events above the
reserved mark, so events lost with a dead owner leave a gap instead of having
their numbers reused.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004_sequence_reserved"
down_revision: str | None = "0003_thread_scope"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# A plain ADD COLUMN on both backends: a SQLite batch migration would copy and
# drop the runs table, and dropping it cascades to every checkpoint and event.


def upgrade() -> None:
    op.add_column(
        "runs", sa.Column("sequence_reserved", sa.BigInteger(), server_default=sa.text("0"), nullable=False)
    )


def downgrade() -> None:
    op.drop_column("runs", "sequence_reserved")
