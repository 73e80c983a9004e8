"""Pages of the Agent's listings: their size, their byte budget, and the tokens that continue them.

Every paged RPC (GetThread's messages, ListCheckpoints, ListThreads,
ListRuns, ListMemories) follows the same rules, kept here:

- A page holds at most `page_size` items (0 = DEFAULT_PAGE_SIZE, at most
  MAX_PAGE_SIZE) and ends early once the response would pass
  RESPONSE_BYTES (gateway.journal.budget), so it fits a client with gRPC's default 4 MiB receive
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

from agentloop.kernel.errors import InvalidArgument

if TYPE_CHECKING:
    from gateway.store.base import Store

MAX_PAGE_SIZE = 1000
DEFAULT_PAGE_SIZE = 100
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


__all__ = [
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "PageTokens",
    "Position",
    "page_size",
]
