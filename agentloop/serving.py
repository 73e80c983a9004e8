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
import signal
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Self

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio
from grpc_status import rpc_status

from agentloop.channels import CHANNEL_OPTIONS as CHANNEL_OPTIONS  # re-exported for older imports
from agentloop.channels import MAX_MESSAGE_BYTES, SERVER_OPTIONS
from agentloop.errors import NO_RETRY, AgentloopError
from agentloop.errors import rpc_status as error_status
from agentloop.handlers import StreamBehavior, UnaryBehavior, wrap_handler
from agentloop.reflection import enable_reflection
from agentloop.security import Authenticator, AuthInterceptor, TlsSettings
from agentloop.settings import SettingError, reuse_port
from agentloop.telemetry import ServerTracingInterceptor, Telemetry

log = logging.getLogger(__name__)


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

    Every error leaves with its google.rpc.Status details (agentloop.errors.rpc_status).

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


@dataclass(frozen=True)
class ServerHandle:
    """A started gRPC server, the port it bound and its health servicer."""

    server: grpc.aio.Server
    port: int
    health: health_aio.HealthServicer


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
    ) -> ServerHandle:
        """Register the servicer, health and reflection, bind and start; port 0 picks a free port.

        Every RPC (but health and reflection) gets a SERVER span that continues the
        caller's trace; the tracing interceptor is outermost so it sees the status
        the error interceptor sets. The port is not shared (gRPC's SO_REUSEPORT is
        turned off, so a second server on a taken port fails with PortInUse
        instead of silently receiving part of the first one's connections) unless
        ``share_port`` (default: AGENTLOOP_REUSE_PORT) asks for it.
        """
        if self._handle is not None:
            raise RuntimeError("the server already listens")
        share = reuse_port() if share_port is None else share_port
        interceptors: list[grpc.aio.ServerInterceptor] = [
            ServerTracingInterceptor(telemetry or Telemetry.noop()),
            ErrorInterceptor(),
        ]
        if authenticator is not None and authenticator.enabled:
            # Inside the error interceptor, so a refused token becomes UNAUTHENTICATED like any typed error.
            interceptors.append(AuthInterceptor(authenticator))
        options = [
            *SERVER_OPTIONS,
            ("grpc.max_send_message_length", max_message_bytes),
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.so_reuseport", 1 if share else 0),
        ]
        if port and not share:
            _check_port_free(host, port)
        server = grpc.aio.server(interceptors=interceptors, options=options)
        register(server)
        health = health_aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(health, server)
        enable_reflection(
            server, [*service_names, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name]
        )
        credentials = tls.server_credentials() if tls is not None else None
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
        self._handle = ServerHandle(server=server, port=bound, health=health)
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
