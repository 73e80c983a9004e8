"""Long-term memory: facts a user asked the agent to remember, recalled in later runs.

Detection is deliberately literal (seed 000's memory_trigger): a message that
starts with "remember that …", "remember: …", "please remember …", "记住…" or
"请记住…" stores the rest as a fact for that user. Recall ranks a user's facts
by word overlap with the new question (ties: newest first) and puts the best
few in a system message of the model call; they are never written into the
thread, so deleting a memory really removes it from later runs.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import delete, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.storable import storable
from gateway.store import tables as t
from gateway.store.errors import scrubbed

_TRIGGER = re.compile(
    r"^\s*(?:please\s+)?remember\b(?:\s+that\b)?\s*[:,]?\s*(?P<en>.+)$|^\s*请?记住\s*[:：,，]?\s*(?P<zh>.+)$",
    re.IGNORECASE | re.DOTALL,
)
_WORD = re.compile(r"\w+", re.UNICODE)
_MAX_FACT_CHARS = 2000
RECALL_LIMIT = 5


def memory_instruction(text: str) -> str | None:
    """The fact to store when `text` asks to remember something, else None."""
    match = _TRIGGER.match(text)
    if match is None:
        return None
    fact = (match.group("en") or match.group("zh") or "").strip().rstrip("。.!！")
    return fact[:_MAX_FACT_CHARS] or None


def _words(text: str) -> set[str]:
    words = {w.lower() for w in _WORD.findall(text) if len(w) > 2}
    # CJK text has no spaces: single characters are its words.
    words |= {ch for ch in text if "\u4e00" <= ch <= "\u9fff"}
    return words


@dataclass(frozen=True)
class Memory:
    memory_id: str
    user_id: str
    text: str
    created_at: datetime


def rank(memories: list[Memory], question: str, limit: int = RECALL_LIMIT) -> list[Memory]:
    """The facts most related to `question` (word overlap), newest first among equals.

    With no overlap at all the newest facts are still returned: a user who
    told the agent their name expects it to be known in every conversation.
    """
    wanted = _words(question)
    scored = sorted(memories, key=lambda m: (len(wanted & _words(m.text)), m.created_at), reverse=True)
    return scored[:limit]


class MemoryStore:
    """The `memories` table, on the gateway's engine."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    async def add(self, user_id: str, text: str) -> Memory:
        """Store a fact for a user (NUL, which Postgres text cannot hold, becomes U+FFFD)."""
        text = storable(text)
        memory = Memory(uuid.uuid4().hex, user_id, text, datetime.now(UTC))
        with scrubbed():
            async with self._engine.begin() as conn:
                await conn.execute(
                    insert(t.memories).values(
                        memory_id=memory.memory_id, user_id=user_id, text=text, created_at=memory.created_at
                    )
                )
        return memory

    async def list(self, user_id: str, limit: int | None = None, offset: int = 0) -> list[Memory]:
        """A user's facts, newest first; a page of at most `limit` of them from position `offset`."""
        query = (
            select(t.memories)
            .where(t.memories.c.user_id == user_id)
            .order_by(t.memories.c.created_at.desc(), t.memories.c.memory_id)
            .offset(offset)
            .limit(limit)
        )
        with scrubbed():
            async with self._engine.connect() as conn:
                rows = (await conn.execute(query)).mappings().all()
        return [Memory(r["memory_id"], r["user_id"], r["text"], _aware(r["created_at"])) for r in rows]

    async def delete(self, user_id: str, memory_id: str) -> bool:
        """Delete one fact; False when the user has no such fact."""
        with scrubbed():
            async with self._engine.begin() as conn:
                result = await conn.execute(
                    delete(t.memories).where(
                        t.memories.c.user_id == user_id, t.memories.c.memory_id == memory_id
                    )
                )
        return bool(result.rowcount)


def _aware(when: datetime) -> datetime:
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)
