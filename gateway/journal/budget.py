"""What one response of the Agent may hold, so that it fits a client with gRPC's default 4 MiB limit.

The gateway's own message limit is larger; every response built from a run's record (a final
event, a page of messages, Invoke's answer, a run's reply in a listing) is cut to these budgets,
with flags that say what was cut. The thread in the store keeps everything (GetThread pages it).
"""

from __future__ import annotations

from agentloop.v1 import agent_pb2, common_pb2

RESPONSE_BYTES = 3584 * 1024
"""Most bytes a paged response (or any response built to a budget) holds: 3.5 MiB, under the 4 MiB
default receive limit of gRPC clients with room for framing and small fields counted loosely."""
REPLY_BYTES = 512 * 1024
"""Most bytes of a run's reply GetThread's state carries: the whole reply is also the last
assistant message of the page(s) beside it."""
PREVIEW_CHARS = 1000
"""Characters of a run's reply that ListRuns shows (RunInfo.final_reply_truncated says when cut)."""


class Budget:
    """Bytes left for a response's items: a page takes items while they fit (the first always)."""

    def __init__(self, total: int = RESPONSE_BYTES) -> None:
        self.left = total

    def take(self, size: int, *, first: bool = False) -> bool:
        """Whether an item of `size` bytes fits; if so, it is counted. `first`: it is taken anyway."""
        size += 8  # field tag and length prefix, generously
        if size > self.left and not first:
            return False
        self.left -= size
        return True


def cut_text(text: str, max_bytes: int) -> str:
    """The longest prefix of `text` whose UTF-8 encoding fits in `max_bytes` (whole characters only)."""
    data = text.encode()
    if len(data) <= max_bytes:
        return text
    return data[: max(0, max_bytes)].decode(errors="ignore")


def bounded_final(final: agent_pb2.RunFinal) -> agent_pb2.RunFinal:
    """`final` within RESPONSE_BYTES: the reply whole if it fits alone, then the messages that fit.

    run_messages keeps the first messages of the run that fit, in order; the
    flags say what was cut. The thread holds everything (GetThread).
    """
    if final.ByteSize() <= RESPONSE_BYTES:
        return final
    bounded = agent_pb2.RunFinal()
    bounded.CopyFrom(final)
    del bounded.run_messages[:]
    excess = bounded.ByteSize() + 64 - RESPONSE_BYTES
    if excess > 0:
        reply = final.final_reply
        bounded.final_reply = cut_text(reply, max(0, len(reply.encode()) - excess))
        bounded.final_reply_truncated = True
    budget = Budget(RESPONSE_BYTES - bounded.ByteSize())
    for message in final.run_messages:
        if not budget.take(message.ByteSize()):
            bounded.run_messages_truncated = True
            break
        bounded.run_messages.append(message)
    return bounded


def bounded_reply(
    info: agent_pb2.RunInfo, max_bytes: int = REPLY_BYTES, max_chars: int | None = None
) -> None:
    """Cut `info.final_reply` to `max_bytes` (and `max_chars`), setting final_reply_truncated if it was."""
    reply = info.final_reply
    cut = cut_text(reply if max_chars is None else reply[:max_chars], max_bytes)
    if len(cut) < len(reply):
        info.final_reply = cut
        info.final_reply_truncated = True


def message_part(
    message: common_pb2.Message, content_at: int, reasoning_at: int, room: int
) -> tuple[common_pb2.Message, int, int] | None:
    """The part of `message` from the given text offsets that fits in `room` bytes.

    Returns (part, content offset, reasoning offset) where the offsets say
    where the rest starts, both -1 when the part ends the message; None when
    not even a useful part fits. A message that fits whole from its start is
    returned as is; otherwise the part carries the reasoning text first,
    then the content, and its tool calls only in the part that starts it.
    """
    if content_at == reasoning_at == 0 and message.ByteSize() + 8 <= room:
        return message, -1, -1
    part = common_pb2.Message(role=message.role, tool_call_id=message.tool_call_id, name=message.name)
    if content_at == reasoning_at == 0:
        part.tool_calls.extend(message.tool_calls)
    room -= part.ByteSize() + 64
    reasoning = cut_text(message.reasoning_content[reasoning_at:], max(0, room))
    content = cut_text(message.content[content_at:], max(0, room - len(reasoning.encode())))
    if reasoning_at + len(reasoning) < len(message.reasoning_content):
        content = ""
    if (
        not reasoning
        and not content
        and (reasoning_at < len(message.reasoning_content) or content_at < len(message.content))
    ):
        return None  # no room for any of the text that is left
    part.reasoning_content, part.content = reasoning, content
    reasoning_at, content_at = reasoning_at + len(reasoning), content_at + len(content)
    if reasoning_at < len(message.reasoning_content) or content_at < len(message.content):
        return part, content_at, reasoning_at
    return part, -1, -1


__all__ = [
    "PREVIEW_CHARS",
    "REPLY_BYTES",
    "RESPONSE_BYTES",
    "Budget",
    "bounded_final",
    "bounded_reply",
    "cut_text",
    "message_part",
]
