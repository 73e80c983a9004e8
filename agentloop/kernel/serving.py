"""What every agentloop gRPC server shares: error mapping, health, reflection, its lifecycle.

Each service's `create_server` returns a `Server` (port 0 in tests picks a free port):
the gRPC server, listening, and what the service opened for it (model client, MCP
sessions, database, run manager). `Server.aclose()` is the one shutdown of all three
services: NOT_SERVING, drain in-flight calls, then close those resources newest first.
A service's `serve()` is `serve_service` (create, serve until a signal, close); tests
use `async with`.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import resource
import signal
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Self

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio
from grpc_status import rpc_status

from agentloop.kernel.call_limits import CallLimits
from agentloop.kernel.channels import CHANNEL_OPTIONS as CHANNEL_OPTIONS  # re-exported for older imports
from agentloop.kernel.channels import MAX_MESSAGE_BYTES, SERVER_OPTIONS, connection_cap, limit_options
from agentloop.kernel.errors import NO_RETRY, AgentloopError
from agentloop.kernel.errors import rpc_status as error_status
from agentloop.kernel.handlers import StreamBehavior, UnaryBehavior, wrap_handler
from agentloop.kernel.reflection import enable_reflection
from agentloop.kernel.security import Authenticator, AuthInterceptor
from agentloop.kernel.setting_errors import SettingError
from agentloop.kernel.settings import ServerLimits, TlsSettings, reuse_port
from agentloop.kernel.telemetry import ServerTracingInterceptor, Telemetry
from agentloop.kernel.tls import server_credentials

log = logging.getLogger(__name__)

HEALTH_REASON_KEY = "agentloop-health-reason"
"""Trailing metadata of a health Check answered NOT_SERVING: why (`agentloop health` prints it)."""
_MAX_REASON_CHARS = 1000
SHUTTING_DOWN = "the server is shutting down"


class PortInUse(SettingError):
    """Another process already listens on the port a server was told to use."""

    def __init__(self, host: str, port: int) -> None:
        super().__init__(
            f"port {port} is already in use (on {host}); stop the other server or choose another port "
            "(--port or the service's *_PORT variable)"
        )
        self.port = port


def _check_port_free(host: str, port: int) -> None:
    """Raise PortInUse when something listens on ``host:port``, SettingError when it cannot be bound.

    gRPC would report the same failure only as "Failed to bind", after logging
    its own multi-line error, so the port is tried first with a plain socket
    (SO_REUSEADDR like gRPC's own, SO_REUSEPORT off) and closed at once.
    """
    try:
        infos = socket.getaddrinfo(
            host.strip("[]") or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except OSError:
        return  # an unresolvable host: let gRPC report it
    for family, kind, proto, _, address in infos:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    raise PortInUse(host, port) from None
                raise SettingError(f"cannot listen on {host}:{port}: {exc.strerror}") from None


async def _abort(context: grpc.aio.ServicerContext, exc: Exception) -> None:
    """End the call with the error's status and its google.rpc.Status details trailer."""
    if not isinstance(exc, AgentloopError):
        log.error("unexpected error in RPC handler", exc_info=exc)
        exc = AgentloopError(f"internal error: {type(exc).__name__}")
    status = rpc_status.to_status(error_status(exc))
    trailers = tuple(status.trailing_metadata)
    if exc.retried:
        trailers += (NO_RETRY,)
    await context.abort(status.code, status.details, trailers)


class ErrorInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Maps AgentloopError subclasses to their status codes and anything else to INTERNAL.

    Every error leaves with its google.rpc.Status details (agentloop.kernel.errors.rpc_status).

    Wrapping the method handlers here is what keeps `context.abort` out of the
    servicers: they raise typed errors and stay testable as plain functions.
    """

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None:
            return None

        def unary(behavior: UnaryBehavior) -> UnaryBehavior:
            async def wrapper(request: Any, context: grpc.aio.ServicerContext) -> Any:
                try:
                    return await behavior(request, context)
                except grpc.aio.AbortError:
                    raise
                except Exception as exc:
                    await _abort(context, exc)

            return wrapper

        def stream(behavior: StreamBehavior) -> StreamBehavior:
            async def wrapper(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
                try:
                    async for item in behavior(request, context):
                        yield item
                except grpc.aio.AbortError:
                    raise
                except Exception as exc:
                    await _abort(context, exc)

            return wrapper

        return wrap_handler(handler, unary, stream)


class Health(health_aio.HealthServicer):  # type: ignore[misc]
    """grpc.health.v1, which also says why a service is NOT_SERVING.

    The protocol's answer is a status and nothing else; the reason set with the
    status travels in the Check's trailing metadata (`HEALTH_REASON_KEY`), so an
    operator running `agentloop health` reads what is wrong, not only that
    something is. Clients that ignore metadata see plain grpc.health.v1.
    """

    def __init__(self) -> None:
        super().__init__()
        self.reasons: dict[str, str] = {}

    async def set(
        self, service: str, status: health_pb2.HealthCheckResponse.ServingStatus, reason: str = ""
    ) -> None:
        """Publish `service`'s status; `reason` says why when it is not SERVING."""
        if self._gracefully_shutting_down:
            return
        if status == health_pb2.HealthCheckResponse.SERVING or not reason:
            self.reasons.pop(service, None)
        else:
            self.reasons[service] = reason
        await super().set(service, status)

    async def enter_graceful_shutdown(self) -> None:
        for service in list(self._server_status):
            self.reasons[service] = SHUTTING_DOWN
        await super().enter_graceful_shutdown()

    async def Check(
        self, request: health_pb2.HealthCheckRequest, context: grpc.aio.ServicerContext | None
    ) -> health_pb2.HealthCheckResponse:
        """The status, and why in the trailing metadata (no call, as when asked in process: no metadata)."""
        reply: health_pb2.HealthCheckResponse = await super().Check(request, context)
        reason = self.reasons.get(request.service)
        if context is not None and reason and reply.status != health_pb2.HealthCheckResponse.SERVING:
            context.set_trailing_metadata(((HEALTH_REASON_KEY, _header_text(reason)),))
        return reply


def _header_text(text: str) -> str:
    """`text` as a gRPC ASCII metadata value: printable ASCII on one line, bounded."""
    flat = " ".join(text.split())
    ascii_text = flat.encode("ascii", "backslashreplace").decode("ascii")
    return ascii_text[:_MAX_REASON_CHARS]


def open_file_limit() -> int | None:
    """The process's soft limit on open descriptors (None: unlimited)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft


def raise_open_file_limit() -> None:
    """Lift the soft descriptor limit to the hard one, as a server process should at start.

    Many systems start processes with a soft limit of 1,024 under a far higher
    hard one; every connection held takes a descriptor, and the connection cap
    is half of this limit (agentloop.kernel.channels.limit_options).
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


@dataclass(frozen=True)
class ServerHandle:
    """A started gRPC server, the port it bound, its health servicer and its call counter."""

    server: grpc.aio.Server
    port: int
    health: Health
    calls: CallLimits


class Server:
    """A service's running server and everything the service opened for it.

    A `create_server` pushes what it opens onto `resources` as it opens it
    (`resources.push_async_callback(client.close)`), starts listening with
    `listen`, and does both inside `starting()`, so a start that fails part way
    (a port in use, a database down) closes what was already open. Whatever the
    service, `aclose` stops in the same order: health says NOT_SERVING (balancers
    stop sending calls), in-flight calls get `grace` seconds, then the resources
    close newest first, so nothing a call still uses is closed under it.
    """

    def __init__(self) -> None:
        self.resources = contextlib.AsyncExitStack()
        self._handle: ServerHandle | None = None
        self._closed = False

    @property
    def handle(self) -> ServerHandle:
        if self._handle is None:
            raise RuntimeError("the server is not listening yet")
        return self._handle

    @property
    def port(self) -> int:
        """The port it listens on (the one picked when it was asked for port 0)."""
        return self.handle.port

    @property
    def server(self) -> grpc.aio.Server:
        return self.handle.server

    async def listen(
        self,
        register: Callable[[grpc.aio.Server], None],
        service_names: Sequence[str],
        host: str = "127.0.0.1",
        port: int = 0,
        telemetry: Telemetry | None = None,
        *,
        tls: TlsSettings | None = None,
        authenticator: Authenticator | None = None,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        share_port: bool | None = None,
        limits: ServerLimits | None = None,
    ) -> ServerHandle:
        """Register the servicer, health and reflection, bind and start; port 0 picks a free port.

        Every RPC (but health and reflection) gets a SERVER span that continues the
        caller's trace; the tracing interceptor is outermost so it sees the status
        the error interceptor sets. The port is not shared (gRPC's SO_REUSEPORT is
        turned off, so a second server on a taken port fails with PortInUse
        instead of silently receiving part of the first one's connections) unless
        ``share_port`` (default: AGENTLOOP_REUSE_PORT) asks for it.

        ``limits`` (default: ServerLimits.from_env()) bound what clients may hold:
        connections through gRPC's own options, calls in flight per address and in
        all through `CallLimits`, which sees every call (health included) before its
        token is checked, so an unauthenticated flood is bounded like any other.
        """
        if self._handle is not None:
            raise RuntimeError("the server already listens")
        share = reuse_port() if share_port is None else share_port
        limits = ServerLimits.from_env() if limits is None else limits
        calls = CallLimits(limits.max_calls, limits.max_calls_per_peer)
        interceptors: list[grpc.aio.ServerInterceptor] = [
            ServerTracingInterceptor(telemetry or Telemetry.noop()),
            ErrorInterceptor(),
            # Inside the error interceptor, so a refused call becomes RESOURCE_EXHAUSTED with its details.
            calls,
        ]
        if authenticator is not None and authenticator.enabled:
            # Inside the error interceptor, so a refused token becomes UNAUTHENTICATED like any typed error.
            interceptors.append(AuthInterceptor(authenticator))
        files = open_file_limit()
        cap = connection_cap(limits.max_connections, files)
        if cap and cap < limits.max_connections:
            log.info(
                "accepting at most %d connections: half of this process's open-file limit (%d), "
                "below AGENTLOOP_MAX_CONNECTIONS=%d",
                cap,
                files,
                limits.max_connections,
            )
        options = [
            *SERVER_OPTIONS,
            *limit_options(limits, files),
            ("grpc.max_send_message_length", max_message_bytes),
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.so_reuseport", 1 if share else 0),
        ]
        if port and not share:
            _check_port_free(host, port)
        server = grpc.aio.server(interceptors=interceptors, options=options)
        register(server)
        health = Health()
        health_pb2_grpc.add_HealthServicer_to_server(health, server)
        enable_reflection(
            server, [*service_names, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name]
        )
        credentials = server_credentials(tls) if tls is not None else None
        try:
            if credentials is None:
                bound = server.add_insecure_port(f"{host}:{port}")
            else:
                bound = server.add_secure_port(f"{host}:{port}", credentials)
        except RuntimeError:  # grpcio's "Failed to bind"; taken between the check and here, or unbindable
            bound = 0
        if bound == 0:
            _check_port_free(host, port)
            raise SettingError(f"cannot listen on {host}:{port}")
        await server.start()
        for name in ("", *service_names):
            await health.set(name, health_pb2.HealthCheckResponse.SERVING)
        self._handle = ServerHandle(server=server, port=bound, health=health, calls=calls)
        return self._handle

    @contextlib.asynccontextmanager
    async def starting(self) -> AsyncIterator[Self]:
        """Around a `create_server`'s body: when it fails, what it had opened is closed (at once)."""
        try:
            yield self
        except BaseException:
            await self.aclose(0)
            raise

    async def aclose(self, grace: float | None = 5.0) -> None:
        """NOT_SERVING, let in-flight calls finish for `grace` seconds (then cancel them), close the rest.

        Closing twice is harmless: the second call returns at once.
        """
        if self._closed:
            return
        self._closed = True
        try:
            if self._handle is not None:
                await self._handle.health.enter_graceful_shutdown()
                await self._handle.server.stop(grace)
        finally:
            await self.resources.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


async def serve_service(
    name: str, telemetry_name: str, create: Callable[[Telemetry], Awaitable[Server]], grace: float = 10.0
) -> None:
    """What `agentloop serve <service>` runs: create the server, serve until SIGINT/SIGTERM, close it.

    Telemetry (`telemetry_name` is its service.name) is flushed last, so the spans of the
    calls drained during shutdown are exported too.
    """
    raise_open_file_limit()
    async with contextlib.aclosing(Telemetry.from_env(telemetry_name)) as telemetry:
        await run_until_signal(await create(telemetry), name, grace)


async def run_until_signal(server: Server, name: str, grace: float = 10.0) -> None:
    """Serve until SIGINT/SIGTERM, then close `server`, draining in-flight calls for `grace` seconds."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(f"{name} listening on port {server.port}", flush=True)
    log.info("%s listening on port %d", name, server.port)
    try:
        await stop.wait()
        log.info("%s stopping (grace %.1fs)", name, grace)
    finally:
        await server.aclose(grace)
