"""Secrets kept per database: random values every gateway on the database shares.

Revision ID: 0006_secrets
Revises: 0005_request_id
Create Date: 2025-01-05

`secrets` holds named random values created on first use (the first
insert of a name wins, so concurrent gateways agree on one). The page-token
key lives here: a page token one gateway signs is accepted by every gateway
of the deployment, with nothing to configure.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006_secrets"
down_revision: str | None = "0005_request_id"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "secrets",
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("value", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_secrets"),
    )


def downgrade() -> None:
    op.drop_table("secrets")
