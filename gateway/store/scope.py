"""Thread ids are the client's names, scoped per user: the store keys a thread by (user, id).

A client picks its own thread ids. Keyed by that id alone, two users would
share one namespace: a Run naming another user's id would either fail
(telling the caller the id exists) or squat ids before their owner used
them. So the store keys a thread by `thread_key(user_id, thread_id)`, the
user id and the client's id joined by the ASCII unit separator, which no
client id can contain (`gateway.api.access.check_ids` refuses control
characters). Every lookup by thread therefore names the user, and user B's
"t1" is simply another thread than user A's "t1".

The key stays inside the store: rows come back with the client's id
(`client_thread_id`), so nothing above the store ever sees a key.
"""

from __future__ import annotations

SEPARATOR = "\x1f"


def thread_key(user_id: str, thread_id: str) -> str:
    """The stored key of `user_id`'s thread `thread_id`."""
    if SEPARATOR in thread_id:
        raise ValueError("a thread id must not contain control characters")
    return f"{user_id}{SEPARATOR}{thread_id}"


def client_thread_id(key: str) -> str:
    """The client's thread id inside a stored key (the part after the last separator)."""
    return key.rpartition(SEPARATOR)[2]
