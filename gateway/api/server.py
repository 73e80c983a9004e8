"""The gateway's server: what it opens, in which order, and how it closes.

`create_server` opens the store, the connections to the Reasoner and the ToolService, the run
manager and the Agent service, listens, and starts the dependency probes; each is pushed onto
the server's resources as it opens, so `aclose` (or a start that fails part way) closes them
newest first. `serve` is the process's main: serve until SIGTERM, then close.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from agentloop.kernel.retry import RetryPolicy
from agentloop.kernel.security import Authenticator
from agentloop.kernel.serving import Server, serve_service
from agentloop.kernel.settings import GatewaySettings, TlsSettings
from agentloop.kernel.telemetry import Telemetry
from agentloop.v1 import agent_pb2_grpc
from gateway.api.health import DependencyHealth, reasoner_probe, store_probe, tools_probe
from gateway.api.service import SERVICE_NAME, AgentService
from gateway.deps.clients import Dependencies
from gateway.runs.manager import RunManager
from gateway.store.base import Store
from gateway.store.factory import open_store

log = logging.getLogger(__name__)


class Gateway(Server):
    """A running gateway: its server, and the service, run manager, connections and store behind it.

    Closing it drains streams, then stops local runs at their last checkpoint and hands their
    leases over, then closes the connections to the Reasoner and ToolService and the store.
    """

    service: AgentService
    manager: RunManager
    deps: Dependencies
    store: Store
    health: DependencyHealth
    """The dependency probes that flip the gateway's own health (readiness)."""


async def create_server(
    settings: GatewaySettings,
    store: Store | None = None,
    telemetry: Telemetry | None = None,
    tls: TlsSettings | None = None,
    authenticator: Authenticator | None = None,
    service_token: str = "",
) -> Gateway:
    """Start a gateway on settings.host:settings.port (0 = any free port).

    `tls` secures both the gateway's own port and its calls to the Reasoner
    and ToolService; `authenticator` turns on bearer-token authentication;
    `service_token` is sent on every call to the Reasoner and ToolService.
    A `store` given here is closed with the gateway, like the one it opens.
    """
    async with Gateway().starting() as gateway:
        if store is None:
            store = await open_store(
                settings.database_url or None,
                migrate=settings.db_migrate,
                pool_size=settings.db_pool_size,
                lease_s=settings.lease_s,
                connect_s=settings.db_connect_s,
                retry_budget_s=settings.store_retry_budget_s,
                temp_file_limit=settings.db_temp_file_limit,
            )
        gateway.store = store
        gateway.resources.push_async_callback(store.close)
        gateway.deps = deps = Dependencies(
            settings.reasoner_addr,
            settings.tools_addr,
            RetryPolicy(settings.rpc_attempts, settings.rpc_backoff_s, wait_s=settings.rpc_wait_s),
            tls=tls,
            service_token=service_token,
        )
        gateway.resources.push_async_callback(deps.close)
        gateway.manager = manager = RunManager(settings, deps, store, telemetry)
        gateway.resources.push_async_callback(manager.shutdown)
        gateway.service = service = AgentService(manager)
        handle = await gateway.listen(
            lambda server: agent_pb2_grpc.add_AgentServicer_to_server(service, server),
            [SERVICE_NAME],
            settings.host,
            settings.port,
            telemetry,
            tls=tls,
            authenticator=authenticator,
            max_message_bytes=settings.max_message_bytes,
            limits=settings.limits,
        )
        manager.start_background()
        probes = {
            "reasoner": reasoner_probe(deps.reasoner_channel),
            "tools": tools_probe(deps.tools_channel),
            "store": store_probe(store),
        }
        gateway.health = DependencyHealth(handle.health, SERVICE_NAME, probes, settings.health_interval_s)
        health_task = asyncio.create_task(gateway.health.run(), name="gateway-health")
        gateway.resources.push_async_callback(_cancelled, health_task)
    log.info(
        "gateway %s uses reasoner at %s and tools at %s",
        manager.instance_id,
        settings.reasoner_addr,
        settings.tools_addr,
    )
    return gateway


async def _cancelled(task: asyncio.Task[None]) -> None:
    """Cancel `task` and wait until it has stopped."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def serve(settings: GatewaySettings) -> None:
    """Run a gateway until SIGINT/SIGTERM; spans and metrics are flushed on the way out."""
    security = settings.security
    tls, authenticator, token = (
        security.tls,
        Authenticator.from_settings(security.auth),
        security.service_token,
    )
    await serve_service(
        "gateway",
        "agentloop-gateway",
        lambda telemetry: create_server(
            settings, telemetry=telemetry, tls=tls, authenticator=authenticator, service_token=token
        ),
    )
