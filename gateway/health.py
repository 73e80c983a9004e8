"""The gateway's health reflects what it depends on: the store, the Reasoner and the ToolService.

A background check every few seconds probes each dependency (`SELECT 1` on the
store, grpc.health.v1 Check on the two services over the gateway's own
channels) and publishes one health status per dependency ("store",
"reasoner", "tools") plus the overall one: SERVING only when all three are.
A load balancer that checks the gateway thus stops sending runs to a gateway
that could not finish them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from agentloop.serving import Health
from gateway.store.base import Store

log = logging.getLogger(__name__)

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
_PROBE_TIMEOUT_S = 2.0


def store_probe(store: Store) -> Callable[[], Awaitable[bool]]:
    async def probe() -> bool:
        await store.ping()
        return True

    return probe


def service_probe(channel: grpc.aio.Channel) -> Callable[[], Awaitable[bool]]:
    stub = health_pb2_grpc.HealthStub(channel)

    async def probe() -> bool:
        reply = await stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=_PROBE_TIMEOUT_S)
        return bool(reply.status == SERVING)

    return probe


class DependencyHealth:
    """Publishes the gateway's health from periodic probes of its dependencies."""

    def __init__(
        self,
        health: Health,
        service_name: str,
        probes: dict[str, Callable[[], Awaitable[bool]]],
        interval_s: float,
    ) -> None:
        self._health = health
        self._service_name = service_name
        self._probes = probes
        self._interval_s = interval_s
        self.status: dict[str, bool] = {}

    async def check_once(self) -> bool:
        """Probe everything once and publish; True when all dependencies are up."""
        results = await asyncio.gather(*(self._probe(name, p) for name, p in self._probes.items()))
        self.status = dict(zip(self._probes, results, strict=True))
        for name, ok in self.status.items():
            await self._health.set(name, SERVING if ok else NOT_SERVING)
        overall = SERVING if all(results) else NOT_SERVING
        for name in ("", self._service_name):
            await self._health.set(name, overall)
        return all(results)

    async def _probe(self, name: str, probe: Callable[[], Awaitable[bool]]) -> bool:
        try:
            return await asyncio.wait_for(probe(), _PROBE_TIMEOUT_S)
        except Exception as exc:
            log.warning("dependency %s is unhealthy: %s", name, type(exc).__name__)
            return False

    async def run(self) -> None:
        """Probe forever (cancelled when the gateway stops)."""
        while True:
            await self.check_once()
            await asyncio.sleep(self._interval_s)
