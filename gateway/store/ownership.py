"""Whether a caller may touch a run or a thread: the row, read once, or NOT_FOUND.

Every request names its caller (`user_id`, resolved by the gateway's access check,
gateway.api.access); a run or thread of another user is answered exactly like one that does
not exist, so a caller cannot learn which ids others use. Callers keep the row they get rather
than reading it again: retention may delete it between two reads.
"""

from __future__ import annotations

from agentloop.kernel.errors import InvalidArgument, NotFound, Reason
from gateway.store.base import RunRow, Store, ThreadRow


async def owned_run(store: Store, run_id: str, user_id: str) -> RunRow:
    """The run if it exists and belongs to `user_id`; NOT_FOUND otherwise (no existence leak)."""
    if not run_id:
        raise InvalidArgument("run_id", "must not be empty")
    row = await store.get_run(run_id)
    if row is None or row.user_id != user_id:
        raise NotFound(f"run {run_id!r} not found", reason=Reason.RUN_NOT_FOUND, metadata={"run_id": run_id})
    return row


async def owned_thread(store: Store, thread_id: str, user_id: str) -> ThreadRow:
    """The thread, read once; NOT_FOUND unless it exists and belongs to `user_id`."""
    if not thread_id:
        raise InvalidArgument("thread_id", "must not be empty")
    thread = await store.get_thread(thread_id, user_id=user_id)
    if thread is None or thread.user_id != user_id:
        raise NotFound(
            f"thread {thread_id!r} not found",
            reason=Reason.THREAD_NOT_FOUND,
            metadata={"thread_id": thread_id},
        )
    return thread
