"""The ToolService gRPC servicer and its server lifecycle.

The servicer only validates the batch and translates executor events to the
wire; everything about running tools lives in the executor. A bad batch is the
caller's bug and fails the RPC with INVALID_ARGUMENT; a bad call is the
model's mistake and becomes an error result inside a successful stream.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import aclosing

import grpc

from agentloop.kernel.errors import InvalidArgument
from agentloop.kernel.security import Authenticator, service_authenticator
from agentloop.kernel.serving import Server, serve_service
from agentloop.kernel.setting_errors import SettingError
from agentloop.kernel.settings import TlsSettings, ToolSettings
from agentloop.kernel.telemetry import Telemetry
from agentloop.kernel.wellknown import seconds
from agentloop.v1 import common_pb2, tools_pb2, tools_pb2_grpc
from tool_svc.builtins import default_registry
from tool_svc.executor import MAX_BATCH_RESULT_BYTES, ResultMemo, execute
from tool_svc.injected import InjectedValues
from tool_svc.loader import load_modules
from tool_svc.mcp_config import load_mcp_config
from tool_svc.registry import ToolRegistry

log = logging.getLogger(__name__)

SERVICE_NAME = tools_pb2.DESCRIPTOR.services_by_name["ToolService"].full_name
MAX_CALLS_PER_BATCH = 128


class ToolServicer(tools_pb2_grpc.ToolServiceServicer):
    """Serves one registry with the timeout and concurrency defaults of ``settings``."""

    def __init__(
        self, registry: ToolRegistry, settings: ToolSettings, telemetry: Telemetry | None = None
    ) -> None:
        if not settings.timeout_s > 0 or settings.max_concurrency < 1:
            raise ValueError(
                f"the ToolService needs timeout_s > 0 and max_concurrency >= 1, "
                f"got {settings.timeout_s} and {settings.max_concurrency}"
            )
        if not 0 < settings.max_result_bytes <= MAX_BATCH_RESULT_BYTES:
            raise SettingError(
                f"AGENTLOOP_MAX_RESULT_BYTES={settings.max_result_bytes} must be <= {MAX_BATCH_RESULT_BYTES} "
                "(half the gRPC message limit)"
            )
        self._registry = registry
        self._settings = settings
        self._memo = ResultMemo()
        self._telemetry = telemetry or Telemetry.noop()

    async def ListTools(
        self, request: tools_pb2.ListToolsRequest, context: grpc.aio.ServicerContext
    ) -> tools_pb2.ListToolsResponse:
        return tools_pb2.ListToolsResponse(tools=self._registry.specs(request.names or None))

    async def Execute(
        self, request: tools_pb2.ExecuteRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[tools_pb2.ExecuteResponse]:
        timeout_s, max_concurrency = self._limits(request)
        injected = parse_injected(request)
        batch = execute(
            self._registry,
            request.calls,
            timeout_s,
            max_concurrency,
            request.idempotency_scope,
            self._memo,
            injected=injected,
            telemetry=self._telemetry,
            max_result_bytes=self._settings.max_result_bytes,
        )
        async with aclosing(batch) as events:
            async for event in events:
                if isinstance(event, common_pb2.ToolResult):
                    yield tools_pb2.ExecuteResponse(finished=event)
                else:
                    yield tools_pb2.ExecuteResponse(started=event)

    def _limits(self, request: tools_pb2.ExecuteRequest) -> tuple[float, int]:
        """Validate the batch and resolve its (timeout, concurrency), 0 meaning the service default."""
        validate_batch(request)
        timeout_s = seconds(request.timeout) or self._settings.timeout_s
        max_concurrency = request.max_concurrency or self._settings.max_concurrency
        return timeout_s, max_concurrency


def validate_batch(request: tools_pb2.ExecuteRequest) -> None:
    """Raise InvalidArgument naming the first field that makes the batch unusable."""
    calls = request.calls
    if not calls:
        raise InvalidArgument("calls", "must contain at least one call")
    if len(calls) > MAX_CALLS_PER_BATCH:
        raise InvalidArgument("calls", f"has {len(calls)} calls; at most {MAX_CALLS_PER_BATCH} are allowed")
    if request.timeout.ToNanoseconds() < 0:
        raise InvalidArgument("timeout", f"must not be negative, got {request.timeout.ToJsonString()}")
    if request.max_concurrency < 0:
        raise InvalidArgument("max_concurrency", f"must be >= 0, got {request.max_concurrency}")
    first_index: dict[str, int] = {}
    for index, call in enumerate(calls):
        if not call.id:
            raise InvalidArgument(f"calls[{index}].id", "must not be empty")
        if not call.name:
            raise InvalidArgument(f"calls[{index}].name", "must not be empty")
        first = first_index.setdefault(call.id, index)
        if first != index:
            raise InvalidArgument(f"calls[{index}].id", f"duplicates calls[{first}].id")


def parse_injected(request: tools_pb2.ExecuteRequest) -> InjectedValues:
    """The batch's injected values, parsed once; raise InvalidArgument when its JSON is unusable."""
    if not request.HasField("injected"):
        return InjectedValues()
    try:
        return InjectedValues.from_context(request.injected)
    except ValueError as exc:
        field, _, problem = str(exc).partition(": ")
        raise InvalidArgument(f"injected.{field}", problem) from None


async def create_server(
    settings: ToolSettings,
    registry: ToolRegistry | None = None,
    telemetry: Telemetry | None = None,
    tls: TlsSettings | None = None,
    authenticator: Authenticator | None = None,
) -> Server:
    """Start a ToolService on settings.host:settings.port (port 0 picks a free one).

    Without ``registry`` it serves the built-in tools; the modules named in
    ``settings.modules`` are loaded on top either way, then the tools of the
    MCP servers in ``settings.mcp_config`` (each server's first connection is
    awaited, so they are listed from the first ListTools; one that fails is
    logged and retried while the rest serve). With an ``authenticator`` (see
    security.service_authenticator) every call but health and reflection must
    bear the service token. Its MCP sessions close after the in-flight calls.
    """
    tools = default_registry(settings) if registry is None else registry
    load_modules(tools, settings.modules)
    mcp_configs = load_mcp_config(settings.mcp_config) if settings.mcp_config else {}
    servicer = ToolServicer(tools, settings, telemetry)
    async with Server().starting() as server:
        if mcp_configs:
            # Imported here: the SDK takes most of a second to import, which only MCP users should pay.
            from tool_svc.mcp_client import McpServers

            mcp = await McpServers.start(tools, mcp_configs, settings.max_result_bytes)
            server.resources.push_async_callback(mcp.aclose)
        await server.listen(
            lambda grpc_server: tools_pb2_grpc.add_ToolServiceServicer_to_server(servicer, grpc_server),
            [SERVICE_NAME],
            settings.host,
            settings.port,
            telemetry,
            tls=tls,
            authenticator=authenticator,
        )
    log.info("ToolService serving %d tools: %s", len(tools), ", ".join(tools.names()))
    return server


async def serve(settings: ToolSettings) -> None:
    """Run a ToolService until SIGINT/SIGTERM (what ``agentloop serve tools`` does)."""
    tls, authenticator = settings.security.tls, service_authenticator(settings.security.service_token)
    await serve_service(
        "ToolService",
        "agentloop-tools",
        lambda telemetry: create_server(settings, telemetry=telemetry, tls=tls, authenticator=authenticator),
    )
