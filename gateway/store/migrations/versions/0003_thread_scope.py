"""Thread keys scoped per user: a stored thread id becomes "<user_id>\\x1f<client thread id>".

Revision ID: 0003_thread_scope
Revises: 0002
Create Date: 2025-01-03

Data only, no schema change: `threads.thread_id` and the thread_id columns
that refer to it (runs, messages, checkpoints) now hold the key that
`gateway.store.scope.thread_key` builds, so two users' threads of one client
id are two threads. The separator is spelled out here rather than imported: a
revision must keep doing exactly this whatever the application becomes.

Foreign keys stay enforced throughout: each thread is copied under its new
key, its rows are moved to the copy, and only then is the old row deleted.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0003_thread_scope"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SEPARATOR = {"postgresql": "chr(31)", "sqlite": "char(31)"}
_POSITION = {"postgresql": "strpos({text}, {sep})", "sqlite": "instr({text}, {sep})"}
_CHILDREN = ("runs", "messages", "checkpoints")


def _rekey(scoped: bool) -> None:
    dialect = op.get_bind().dialect.name
    sep = _SEPARATOR[dialect]
    has_sep = _POSITION[dialect].format(text="thread_id", sep=sep) + " > 0"
    if scoped:
        new_key = f"user_id || {sep} || thread_id"
        old_rows = f"NOT ({has_sep})"
    else:
        start = _POSITION[dialect].format(text="thread_id", sep=sep)
        new_key = f"substr(thread_id, {start} + 1)"
        old_rows = has_sep
    op.execute(
        "INSERT INTO threads (thread_id, user_id, created_at, updated_at, message_count)"
        f" SELECT {new_key}, user_id, created_at, updated_at, message_count FROM threads WHERE {old_rows}"
    )
    for table in _CHILDREN:
        op.execute(
            f"UPDATE {table} SET thread_id = (SELECT {new_key} FROM threads"
            f" WHERE threads.thread_id = {table}.thread_id)"
            f" WHERE thread_id IN (SELECT thread_id FROM threads WHERE {old_rows})"
        )
    op.execute(f"DELETE FROM threads WHERE {old_rows}")


def upgrade() -> None:
    _rekey(scoped=True)


def downgrade() -> None:
    # Fails (primary key) where two users have a thread of the same client id:
    # the unscoped schema cannot hold both.
    _rekey(scoped=False)
