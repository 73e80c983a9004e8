"""Long-term memory: facts a user asked the agent to remember, recalled in later runs.

Detection is deliberately literal (seed 000's memory_trigger): a message that
starts with "remember that …", "remember: …", "please remember …", "记住…" or
"请记住…" stores the rest as a fact for that user. Recall ranks a user's facts
by word overlap with the new question (ties: newest first) and puts the best
few in a system message of the model call; they are never written into the
thread, so deleting a memory really removes it from later runs.

Keeping the facts is the store's business (`Store.add_memory` and its
siblings); this module only decides what is a fact and which ones matter.
A run reaches them through its journal (`Memories`, implemented by
`gateway.journal.run_journal.RunJournal`), which retries a database that is busy or
coming back like it retries checkpoints.
"""

from __future__ import annotations

import re
from typing import Protocol

from gateway.store.base import Memory

__all__ = ["RECALL_CANDIDATES", "RECALL_LIMIT", "Memories", "Memory", "memory_instruction", "rank"]

_TRIGGER = re.compile(
    r"^\s*(?:please\s+)?remember\b(?:\s+that\b)?\s*[:,]?\s*(?P<en>.+)$|^\s*请?记住\s*[:：,，]?\s*(?P<zh>.+)$",
    re.IGNORECASE | re.DOTALL,
)
_WORD = re.compile(r"\w+", re.UNICODE)
_MAX_FACT_CHARS = 2000
RECALL_LIMIT = 5
RECALL_CANDIDATES = 1000
"""The user's newest facts that recall ranks: a bounded read (and sort) however many the user keeps."""


class Memories(Protocol):
    """Where a run keeps and recalls its user's facts."""

    async def add_memory(self, user_id: str, text: str) -> Memory:
        """Keep a fact for `user_id`."""
        ...

    async def list_memories(self, user_id: str, limit: int | None = None) -> list[Memory]:
        """The user's newest facts, newest first; at most `limit` of them."""
        ...


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


def rank(memories: list[Memory], question: str, limit: int = RECALL_LIMIT) -> list[Memory]:
    """The facts most related to `question` (word overlap), newest first among equals.

    With no overlap at all the newest facts are still returned: a user who
    told the agent their name expects it to be known in every conversation.
    """
    wanted = _words(question)
    scored = sorted(memories, key=lambda m: (len(wanted & _words(m.text)), m.created_at), reverse=True)
    return scored[:limit]
