"""Pages of the Agent's listings: their size, their byte budget, and the tokens that continue them.

Every paged RPC (GetThread's messages, ListCheckpoints, ListThreads,
ListRuns, ListMemories) follows the same rules, kept here:

- A page holds at most `page_size` items (0 = DEFAULT_PAGE_SIZE, at most
  MAX_PAGE_SIZE) and ends early once the response would pass
  RESPONSE_BYTES, so it fits a client with gRPC's default 4 MiB receive
  limit, whatever the gateway's own (larger) message limit is.
- Pages are keyset pages: the token holds the position of the last item
  sent in the listing's order (a unique, stable key), and the next page
  starts after it. Items added or changed between pages never make another
  item repeat or go missing.
- A token is opaque and tamper-evident: base64url of the position and an
  HMAC-SHA256 over it, the RPC and what the request is about (the caller's
  user id and the thread, run or checkpoint it names). A token from another
  RPC, another thread, another user, a forged or edited one: INVALID_ARGUMENT
  naming `page_token`. The page size is not bound: a client may change it
  between pages. The key is a random value the store keeps
  (`Store.secret`), created by the first gateway that needs it, so every
  gateway on the database accepts the tokens of the others.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from agentloop.errors import InvalidArgument
from agentloop.v1 import agent_pb2, common_pb2

if TYPE_CHECKING:
    from gateway.store.base import Store

MAX_PAGE_SIZE = 1000
DEFAULT_PAGE_SIZE = 100
RESPONSE_BYTES = 3584 * 1024
"""Most bytes a paged response (or any response built to a budget) holds: 3.5 MiB, under the 4 MiB
default receive limit of gRPC clients with room for framing and small fields counted loosely."""
REPLY_BYTES = 512 * 1024
"""Most bytes of a run's reply GetThread's state carries: the whole reply is also the last
assistant message of the page(s) beside it."""
PREVIEW_CHARS = 1000
"""Characters of a run's reply that ListRuns shows (RunInfo.final_reply_truncated says when cut)."""
MAX_TOKEN_CHARS = 2048
"""Longer page tokens are refused before they are decoded."""
KEY_NAME = "page_token_key"
"""The name of the store secret that signs page tokens."""

_VERSION = "1"
_MAC_BYTES = 16

Position = list[str | int]
"""Where a page ended, in the listing's own terms (an index, a timestamp and an id...)."""


def page_size(value: int) -> int:
    """The number of items a page may hold: `value` checked, 0 meaning the default."""
    if not 0 <= value <= MAX_PAGE_SIZE:
        raise InvalidArgument("page_size", f"must be between 1 and {MAX_PAGE_SIZE} (0 = {DEFAULT_PAGE_SIZE})")
    return value or DEFAULT_PAGE_SIZE


def _refused() -> InvalidArgument:
    return InvalidArgument("page_token", "is not a token of a previous response to this request")


class PageTokens:
    """Signs the positions where pages end, and checks the tokens clients send back."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    @classmethod
    async def of(cls, store: Store) -> PageTokens:
        """Tokens signed with the store's key (created there on first use)."""
        return cls(await store.secret(KEY_NAME))

    def _mac(self, rpc: str, binding: Sequence[str], body: bytes) -> bytes:
        mac = hmac.new(self._key, digestmod=hashlib.sha256)
        for part in (_VERSION, rpc, *binding):
            data = part.encode()
            mac.update(len(data).to_bytes(4, "big") + data)
        mac.update(body)
        return mac.digest()[:_MAC_BYTES]

    def issue(self, rpc: str, binding: Sequence[str], position: Position) -> str:
        """The token of the page after `position`, valid only for the same `rpc` and `binding`."""
        body = json.dumps(position, separators=(",", ":")).encode()
        token = base64.urlsafe_b64encode(self._mac(rpc, binding, body) + body).rstrip(b"=")
        return token.decode()

    def read(self, rpc: str, binding: Sequence[str], token: str, shape: Sequence[type]) -> Position | None:
        """The position a token names (None for an empty token: the first page).

        `shape` is the type of each element a position of this listing has.
        Raises InvalidArgument naming `page_token` for anything that is not a
        token this deployment issued for this RPC and binding.
        """
        if not token:
            return None
        if len(token) > MAX_TOKEN_CHARS or not token.isascii():
            raise _refused()
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        except (binascii.Error, ValueError):
            raise _refused() from None
        mac, body = raw[:_MAC_BYTES], raw[_MAC_BYTES:]
        if len(mac) != _MAC_BYTES or not hmac.compare_digest(mac, self._mac(rpc, binding, body)):
            raise _refused()
        try:
            position = json.loads(body)
        except ValueError:
            raise _refused() from None
        if (
            not isinstance(position, list)
            or len(position) != len(shape)
            or not all(type(v) is t for v, t in zip(position, shape, strict=True))
        ):
            raise _refused()
        return position


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
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "PREVIEW_CHARS",
    "REPLY_BYTES",
    "RESPONSE_BYTES",
    "Budget",
    "PageTokens",
    "Position",
    "bounded_final",
    "bounded_reply",
    "cut_text",
    "message_part",
    "page_size",
]
