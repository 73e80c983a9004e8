"""ForkThread: a new thread from a checkpoint of another, always a conversation a model accepts.

A checkpoint may fall between "the model asked for tools" and "the results"
(the agent node's checkpoint, or a run paused for approval). Copied as is,
the fork would end with tool calls that no tool message answers, and every
provider refuses a request like that. So each call left open is closed in
the fork with an error result (`gateway.journal.closing.not_run_result`): the fork is the
conversation as of its checkpoint, when those calls had not finished, and
the model of the fork's next run reads that they did not run (and may call
them again). The assistant message that asked for them stays, text included.
The original thread is not touched.
"""

from __future__ import annotations

from agentloop.v1 import common_pb2
from gateway.journal.closing import not_run_result, tool_message, unanswered_calls
from gateway.store.base import Store, ThreadRow

_TAIL_READ = 64
"""Messages read at a time, backwards from the checkpoint, to find its last assistant message."""


async def open_calls(store: Store, thread: ThreadRow, upto: int) -> list[common_pb2.ToolCall]:
    """Tool calls in the first `upto` messages that none of them answers (its last assistant turn's)."""
    end = upto
    tail: list[common_pb2.Message] = []
    while end > 0:
        start = max(0, end - _TAIL_READ)
        read = await store.thread_messages(
            thread.thread_id, end - start, user_id=thread.user_id, offset=start
        )
        tail = read + tail
        if any(m.role != common_pb2.ROLE_TOOL for m in read):
            break
        end = start
    return unanswered_calls(tail)


async def fork(store: Store, thread: ThreadRow, new_thread_id: str, upto: int) -> ThreadRow:
    """A new thread holding the first `upto` messages of `thread`, its open tool calls closed."""
    closing = [tool_message(not_run_result(call)) for call in await open_calls(store, thread, upto)]
    return await store.fork_thread(
        thread.thread_id, new_thread_id, upto, user_id=thread.user_id, closing=closing
    )
