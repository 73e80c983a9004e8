"""Calls in flight per client address and in all: the bounds gRPC's transport does not keep.

gRPC bounds a server's connections in all (``grpc.max_allowed_incoming_connections``)
and the calls of one connection (``grpc.max_concurrent_streams``), but nothing per
client: one address may open any number of connections and fill each of them. So
every call passes through `CallLimits` first, before its token is checked (an
unauthenticated flood is bounded too): a call beyond the server's total, or beyond
its address's share, ends at once with RESOURCE_EXHAUSTED and a RetryInfo, and costs
the server nothing more.

The address a call comes from (`peer_host`) is also who is calling when nobody
authenticated: `current_caller` is the bearer token's user when there is one, else
that address. The gateway shares its run slots between callers by it.

Connections that make no call are not counted here: gRPC closes them (handshake
and idle timeouts, see agentloop.kernel.settings.ServerLimits).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import ipaddress
import urllib.parse
from types import TracebackType

import grpc

from agentloop.kernel.errors import Reason, ResourceExhausted
from agentloop.kernel.handlers import AroundInterceptor
from agentloop.kernel.security import authenticated_user

_PEER: contextvars.ContextVar[str] = contextvars.ContextVar("agentloop_peer", default="")
RETRY_DELAY_S = 1.0
"""What RetryInfo suggests to a refused caller: calls are short or streams end; a second is plenty."""


@functools.lru_cache(maxsize=4096)
def peer_host(peer: str) -> str:
    """The client address of a gRPC peer string, without its port.

    ``ipv4:10.0.0.5:51234`` → ``10.0.0.5``; ``ipv6:%5B::1%5D:51234`` → ``::1`` (an
    IPv4-mapped IPv6 address becomes the IPv4 one, so a client counts once on a
    dual-stack port); a Unix socket peer is ``unix`` (every local caller shares it).
    Cached: a connection's calls all come from one peer string, and every call asks.
    """
    scheme, _, rest = urllib.parse.unquote(peer).partition(":")
    if scheme not in ("ipv4", "ipv6"):
        return scheme or peer
    host = rest.rpartition(":")[0] or rest
    host = host.strip("[]")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


def current_peer() -> str:
    """The address of the call being served ("" outside a call)."""
    return _PEER.get()


def current_caller() -> str:
    """Who the call being served counts as: ``user:<id>`` when authenticated, else ``peer:<address>``."""
    user = authenticated_user()
    if user is not None:
        return f"user:{user}"
    return f"peer:{_PEER.get()}"


class CallLimits(AroundInterceptor):
    """Counts the calls in flight, per client address and in all, and refuses those beyond the bounds.

    `max_calls` and `max_calls_per_peer` of 0 leave that bound off; the call's
    address is recorded for `current_caller` either way. Counting is synchronous
    (one event loop serves the server), so two calls cannot both take the last place.
    """

    def __init__(self, max_calls: int = 0, max_calls_per_peer: int = 0) -> None:
        self.max_calls = max_calls
        self.max_calls_per_peer = max_calls_per_peer
        self.in_flight = 0
        self.by_peer: dict[str, int] = {}

    def around(self, details: grpc.HandlerCallDetails, context: grpc.aio.ServicerContext) -> _Held:
        return _Held(self, peer_host(context.peer() or ""))

    def take(self, peer: str) -> None:
        """Count one more call from `peer`, or raise ResourceExhausted when a bound is reached."""
        if self.max_calls and self.in_flight >= self.max_calls:
            raise ResourceExhausted(
                f"this server already serves {self.in_flight} calls (AGENTLOOP_MAX_CALLS); retry later",
                reason=Reason.TOO_MANY_CALLS,
                retry_delay_s=RETRY_DELAY_S,
            )
        held = self.by_peer.get(peer, 0)
        if self.max_calls_per_peer and held >= self.max_calls_per_peer:
            raise ResourceExhausted(
                f"{held} calls from {peer} are already in flight (AGENTLOOP_MAX_CALLS_PER_PEER); "
                "retry when some have ended",
                reason=Reason.TOO_MANY_CALLS_FROM_PEER,
                metadata={"peer": peer},
                retry_delay_s=RETRY_DELAY_S,
            )
        self.in_flight += 1
        self.by_peer[peer] = held + 1

    def give_back(self, peer: str) -> None:
        """One call from `peer` ended."""
        self.in_flight -= 1
        left = self.by_peer[peer] - 1
        if left:
            self.by_peer[peer] = left
        else:
            del self.by_peer[peer]


class _Held(contextlib.AbstractAsyncContextManager[None]):
    """One call's place, held from before its handler runs until it ends.

    A plain class rather than a generator-based context manager: every call of
    every service enters one, the model and tool calls of each step included.
    """

    __slots__ = ("_limits", "_peer", "_token")

    def __init__(self, limits: CallLimits, peer: str) -> None:
        self._limits = limits
        self._peer = peer

    async def __aenter__(self) -> None:
        self._limits.take(self._peer)
        self._token = _PEER.set(self._peer)

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._limits.give_back(self._peer)
        with contextlib.suppress(ValueError):  # a stream finalized outside the call's own context
            _PEER.reset(self._token)
