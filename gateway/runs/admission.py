"""Whether a new run may start on a thread, and the thread it starts on.

Checked before the run is created, so a refused request leaves nothing
behind: another user's thread reads as missing (NOT_FOUND, never "forbidden",
so thread ids cannot be probed), seed history is refused on a thread that
already has messages, and a thread whose last run waits for approval takes no
new run until that one is resumed or cancelled.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentloop.kernel.errors import Aborted, InvalidArgument, NotFound, Reason
from gateway.runs.options import RunLikeRequest
from gateway.store.base import CheckpointRow, RequestReplayed, RunStatus, Store


def _not_found(thread_id: str) -> NotFound:
    return NotFound(
        f"thread {thread_id!r} not found", reason=Reason.THREAD_NOT_FOUND, metadata={"thread_id": thread_id}
    )


@dataclass(frozen=True)
class OpenedThread:
    """The thread a run starts on, as admission found it."""

    created: bool
    """Created by this request under an id nobody else knows: it has no messages to read back."""
    previous: CheckpointRow | None = None
    """Its last run's newest checkpoint, which carries how the model counts tokens (its
    calibration): the new run keeps it."""


async def open_thread(
    store: Store, request: RunLikeRequest, thread_id: str, *, fresh_id: bool = False
) -> OpenedThread:
    """The run's thread, created when new.

    `fresh_id`: the gateway just drew `thread_id` at random (no thread id, no
    request id), so no thread can have it: it is created without reading
    first, one round trip less for every new conversation.
    """
    if fresh_id:
        created = await store.create_thread(thread_id, request.user_id)
        if created.user_id != request.user_id:
            raise _not_found(thread_id)
        return OpenedThread(created=True)
    thread = await store.get_thread(thread_id, user_id=request.user_id)
    if thread is not None and request.request_id:
        # A concurrent attempt of the same request got here first: attach to its run.
        replayed = await store.run_by_request(request.user_id, request.request_id)
        if replayed is not None:
            raise RequestReplayed(replayed.run_id)
    if thread is None:
        thread = await store.create_thread(thread_id, request.user_id)
        if thread.user_id != request.user_id:
            raise _not_found(thread_id)
        return OpenedThread(created=False)  # named by the client: another request may write to it
    if thread.user_id != request.user_id:
        raise _not_found(thread_id)
    if thread.message_count and request.history:
        raise InvalidArgument("history", f"thread {thread_id!r} already has messages; send only input")
    latest = await store.latest_run(thread_id, user_id=request.user_id)
    if latest is None:
        return OpenedThread(created=False)
    if latest.status == RunStatus.PAUSED:
        raise Aborted(
            f"thread {thread_id!r} has run {latest.run_id} waiting for approval; "
            "Resume it with decisions (or Cancel it) first",
            reason=Reason.THREAD_AWAITING_APPROVAL,
            metadata={"thread_id": thread_id, "run_id": latest.run_id},
        )
    return OpenedThread(created=False, previous=await store.latest_checkpoint(latest.run_id))
