"""Every gRPC channel agentloop opens, and how it behaves when a server goes away and comes back.

One module decides the transport behaviour of every hop (gateway → Reasoner,
gateway → ToolService, CLI → gateway), so it is tuned in one place:

- **Reconnect backoff bounded for a service mesh.** gRPC's defaults (1 s
  growing ×1.6 up to 120 s) are made for clients on the open internet; between
  services on one network they leave a dependency that restarted unused for up
  to two minutes. Here a channel tries again within `MAX_RECONNECT_BACKOFF_MS`
  of the server coming back.
- **Keepalive** pings find a dead peer (a node gone without a FIN) in
  `KEEPALIVE_TIME_MS + KEEPALIVE_TIMEOUT_MS`, and the servers accept those pings.
- **Replicas.** A target naming several addresses (a `dns:///` name, or a list
  turned into an `ipv4:` target by `agentloop.kernel.settings.grpc_target`) is balanced
  `round_robin`, and each replica's `grpc.health.v1` status is watched
  (client-side health checking): a replica that reports NOT_SERVING (draining
  on shutdown) gets no new calls.
- **Calls wait for a dependency that is coming back** (`waitForReady`) instead
  of failing at once while the channel is reconnecting, and a call that failed
  UNAVAILABLE before its response started is retried by gRPC itself (its
  retry policy), on another replica when there is one. Both are bounded by the
  call's deadline.

The service config carrying the last three is built by `service_config` from an
`agentloop.kernel.retry.RetryPolicy`, where attempts and backoff are defined.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import grpc

from agentloop.kernel.retry import RetryPolicy
from agentloop.kernel.settings import ServerLimits, grpc_target

# Big enough for long conversations; the gateway enforces its own limits.
MAX_MESSAGE_BYTES = 32 * 1024 * 1024

# First reconnect attempt 100 ms after a connection is lost, then growing to at most 1 s.
INITIAL_RECONNECT_BACKOFF_MS = 100
MAX_RECONNECT_BACKOFF_MS = 1_000
# How long one connection attempt may take (gRPC's "min connect timeout", 20 s by default): long
# enough for a TLS handshake on a loaded node, short enough to move on from a vanished pod address.
CONNECT_TIMEOUT_MS = 5_000
KEEPALIVE_TIME_MS = 20_000
KEEPALIVE_TIMEOUT_MS = 10_000
# A headless DNS name is re-resolved at most this often (gRPC's default is 30 s), so a new replica
# is found soon after a connection to an old one fails.
DNS_MIN_RESOLUTION_INTERVAL_MS = 5_000

CHANNEL_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.keepalive_time_ms", KEEPALIVE_TIME_MS),
    ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.initial_reconnect_backoff_ms", INITIAL_RECONNECT_BACKOFF_MS),
    ("grpc.max_reconnect_backoff_ms", MAX_RECONNECT_BACKOFF_MS),
    ("grpc.min_reconnect_backoff_ms", CONNECT_TIMEOUT_MS),
    ("grpc.dns_min_time_between_resolutions_ms", DNS_MIN_RESOLUTION_INTERVAL_MS),
    # A request up to the message limit can still be retried (gRPC buffers 256 KiB by default).
    ("grpc.per_rpc_retry_buffer_size", MAX_MESSAGE_BYTES),
]

# The servers' side of the same agreement: accept the clients' keepalive pings (gRPC servers
# otherwise answer pings more frequent than every 5 minutes with GOAWAY) and ping idle clients.
# Keepalive is enforced: a client that pings more often than every KEEPALIVE_TIME_MS / 2 without
# sending data gets a strike, and its connection is closed (GOAWAY too_many_pings) at the third.
# Pings never count as activity: a connection with no call is closed when idle all the same
# (`limit_options`).
MAX_PING_STRIKES = 2
SERVER_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.keepalive_time_ms", KEEPALIVE_TIME_MS),
    ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.http2.min_ping_interval_without_data_ms", KEEPALIVE_TIME_MS // 2),
    ("grpc.http2.max_ping_strikes", MAX_PING_STRIKES),
]
# What a server's connections may hold, as far as gRPC's transport enforces it (the calls in
# flight per client and in all are counted by agentloop.kernel.call_limits). Each of these arguments is
# read by gRPC core's HTTP/2 server (chttp2_server and its max-age filter):
# - grpc.max_allowed_incoming_connections: a connection beyond it is closed as soon as accepted;
# - grpc.server_handshake_timeout_ms: a connection that has not sent the HTTP/2 preface and its
#   SETTINGS by then is closed (gRPC's default is 120 s);
# - grpc.max_connection_idle_ms: a connection with no call in flight for that long gets GOAWAY;
# - grpc.max_connection_age_ms / _grace_ms: every connection gets GOAWAY at that age (with gRPC's
#   own jitter of 10 %, so reconnections spread out) and is closed after the grace;
# - grpc.max_concurrent_streams: the calls one connection carries at once (SETTINGS; the client
#   queues further calls until one ends).


def limit_options(limits: ServerLimits, open_file_limit: int | None = None) -> list[tuple[str, Any]]:
    """The server options that enforce `limits` (0 leaves gRPC's default).

    The connection cap is held to half of `open_file_limit` (the process's soft
    RLIMIT_NOFILE; None: no such limit): a server that ran out of descriptors
    could no longer open its database, its dependencies or the model provider,
    so a flood of connections would take it down for everyone.
    """
    options: list[tuple[str, Any]] = [
        ("grpc.server_handshake_timeout_ms", _ms(limits.handshake_timeout_s)),
    ]
    cap = connection_cap(limits.max_connections, open_file_limit)
    if cap:
        options.append(("grpc.max_allowed_incoming_connections", cap))
    if limits.connection_idle_s:
        options.append(("grpc.max_connection_idle_ms", _ms(limits.connection_idle_s)))
    if limits.connection_age_s:
        options.append(("grpc.max_connection_age_ms", _ms(limits.connection_age_s)))
        options.append(("grpc.max_connection_age_grace_ms", _ms(limits.connection_age_grace_s)))
    if limits.max_streams_per_connection:
        options.append(("grpc.max_concurrent_streams", limits.max_streams_per_connection))
    return options


def connection_cap(max_connections: int, open_file_limit: int | None) -> int:
    """The connections a server accepts at once: the setting, at most half the open-file limit (0 = off)."""
    if not max_connections:
        return 0
    if open_file_limit is None:
        return max_connections
    return max(1, min(max_connections, open_file_limit // 2))


def _ms(seconds: float) -> int:
    """Seconds as gRPC's int milliseconds (at least 1, at most INT_MAX, gRPC's "unlimited")."""
    return max(1, min(round(seconds * 1000), 2**31 - 1))


def service_config(services: Sequence[str], retry: RetryPolicy, health_service: str = "") -> str:
    """The JSON service config of a channel to replicas of `services` (fully qualified gRPC names).

    round_robin over every resolved address, each replica's health watched
    through grpc.health.v1 `health_service` ("" = the server as a whole), and
    for the named services' methods: wait for ready, and retry UNAVAILABLE.
    The health-check service itself is left out of the method config, so
    probes still fail fast.
    """
    method: dict[str, Any] = {"name": [{"service": s} for s in services], "waitForReady": True}
    policy = retry.grpc_retry_policy()
    if policy is not None:
        method["retryPolicy"] = policy
    config = {
        "loadBalancingConfig": [{"round_robin": {}}],
        "healthCheckConfig": {"serviceName": health_service},
        "methodConfig": [method],
    }
    return json.dumps(config, separators=(",", ":"))


def merge_options(*groups: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Channel or server options with later groups overriding earlier ones, each key once."""
    merged: dict[str, Any] = {}
    for group in groups:
        merged.update(group)
    return list(merged.items())


def open_channel(
    addr: str,
    credentials: grpc.ChannelCredentials | None = None,
    options: Sequence[tuple[str, Any]] = (),
    interceptors: Sequence[Any] = (),
    config: str | None = None,
) -> grpc.aio.Channel:
    """An asyncio channel to `addr` (one address, a list, or a resolver URI) with agentloop's options.

    `options` override the defaults key by key; `config` is a service config
    from `service_config`.
    """
    merged = merge_options(CHANNEL_OPTIONS, options)
    if config is not None:
        merged.append(("grpc.service_config", config))
    target = grpc_target(addr)
    if credentials is None:
        return grpc.aio.insecure_channel(target, options=merged, interceptors=list(interceptors))
    return grpc.aio.secure_channel(target, credentials, options=merged, interceptors=list(interceptors))
