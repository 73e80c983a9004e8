"""What both databases can store as text, and the one place that decides it.

Postgres `text` cannot hold the NUL character (asyncpg refuses the whole
statement), while SQLite stores it and then truncates it in some functions.
So text bound for a text column (ids, memory facts) must be NUL-free before
it reaches either backend. Two policies, by where the text comes from:

- a client's request is refused with INVALID_ARGUMENT naming the field
  (`check_storable`): the client can fix it and nothing is silently changed;
- text a model or a tool produced is repaired (`storable`): a run must never
  fail because a model emitted an odd byte, so NUL becomes U+FFFD, the
  replacement character Unicode reserves for exactly this.

Message content and arguments are stored inside serialized protobuf (bytes
columns), which hold any string; the store still repairs the text columns it
writes, as a last line of defence.
"""

from __future__ import annotations

from agentloop.kernel.errors import InvalidArgument

NUL = "\x00"
REPLACEMENT = "\ufffd"


def storable(text: str) -> str:
    """`text` with every NUL replaced by U+FFFD (the same object when there is none)."""
    return text.replace(NUL, REPLACEMENT) if NUL in text else text


def check_storable(field: str, text: str) -> None:
    """INVALID_ARGUMENT "<field>: must not contain NUL characters" when `text` has one."""
    if NUL in text:
        raise InvalidArgument(field, "must not contain NUL characters")
