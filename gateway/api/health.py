"""The gateway's health reflects what it depends on: the store, the Reasoner and the ToolService.

A background check every few seconds probes each dependency and publishes one
health status per dependency ("store", "reasoner", "tools") plus the overall
one: SERVING only when all three are. A load balancer that checks the gateway
thus stops sending runs to a gateway that could not finish them.

- the store: `SELECT 1`;
- the Reasoner and the ToolService: their grpc.health.v1 status, and then one
  authenticated call over the gateway's own channel, which carries its service
  token (and client certificate). grpc.health.v1 is open to everyone, so a
  gateway whose AGENTLOOP_SERVICE_TOKEN is missing or wrong would otherwise
  report SERVING while the dependency refuses every call of every run. The
  ToolService is asked for its tool list (ListTools, what the gateway's
  catalog reads anyway); the Reasoner is sent a Step with no messages, which
  passes its token check and is then refused INVALID_ARGUMENT by its
  validation, before any model call: that answer proves the token is accepted.
  These calls carry `agentloop-probe` metadata, so the dependency does not
  trace them (agentloop.kernel.telemetry), as it does not trace health checks.

A dependency that is down is NOT_SERVING with a reason: a short one (which
dependency, what kind of failure) in the health answer's trailing metadata
(agentloop.kernel.serving.Health), which anyone may read; the dependency's own message
in the log line "dependency <name> is unhealthy: <reason>", written when the
reason changes, and "dependency <name> is healthy again" when it recovers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import grpc
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc

from agentloop.kernel.serving import HEALTH_REASON_KEY, Health
from agentloop.kernel.telemetry import PROBE_METADATA_KEY
from agentloop.v1 import reasoner_pb2, reasoner_pb2_grpc, tools_pb2, tools_pb2_grpc
from gateway.store.base import Store

log = logging.getLogger(__name__)

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
_PROBE_TIMEOUT_S = 2.0
"""Each call of a probe gets this long."""
_CHECK_TIMEOUT_S = 2 * _PROBE_TIMEOUT_S
"""A whole probe (a service's is two calls) gets this long."""
_REFUSED_CREDENTIALS = (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED)
_PROBE_METADATA = ((PROBE_METADATA_KEY, "health"),)
"""Marks the authenticated probe calls, which the dependency does not trace."""

Probe = Callable[[], Awaitable[None]]
"""Returns when the dependency can serve the gateway; raises (DependencyDown, or anything) when not."""


class DependencyDown(Exception):
    """A dependency cannot serve the gateway: `summary` is safe to publish, str() is the full story."""

    def __init__(self, summary: str, detail: str = "") -> None:
        super().__init__(f"{summary}: {detail}" if detail else summary)
        self.summary = summary


@dataclass(frozen=True)
class ProbeResult:
    """One dependency's state after a probe."""

    ok: bool
    summary: str = ""
    """Why not, in a few words (published in the health answer)."""
    detail: str = ""
    """Why not, with the dependency's own message (logged)."""


def store_probe(store: Store) -> Probe:
    async def probe() -> None:
        await store.ping()

    return probe


def _refused(exc: grpc.aio.AioRpcError, call: str) -> DependencyDown:
    """The failure of an authenticated probe call, naming a refused token or certificate as such."""
    code = exc.code()
    detail = exc.details() or ""
    if code in _REFUSED_CREDENTIALS:
        return DependencyDown(
            f"refuses the gateway's credentials ({code.name})",
            f"{call}: {detail}; give the gateway the same AGENTLOOP_SERVICE_TOKEN as this service "
            "(or a client certificate its AGENTLOOP_TLS_CLIENT_CA accepts)",
        )
    return DependencyDown(f"{call} failed ({code.name})", detail)


def service_probe(channel: grpc.aio.Channel, authenticated: Callable[[], Awaitable[None]]) -> Probe:
    """grpc.health.v1 says SERVING, then `authenticated` (a call needing the gateway's credentials) works."""
    stub = health_pb2_grpc.HealthStub(channel)

    async def probe() -> None:
        call = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=_PROBE_TIMEOUT_S)
        try:
            reply = await call
        except grpc.aio.AioRpcError as exc:
            raise DependencyDown(f"health check failed ({exc.code().name})", exc.details() or "") from None
        if reply.status != SERVING:
            status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
            trailing = await call.trailing_metadata()
            reason = dict(trailing or ()).get(HEALTH_REASON_KEY, "")
            raise DependencyDown(f"reports {status}", str(reason))
        await authenticated()

    return probe


def _probe_call(
    method: grpc.aio.UnaryUnaryMultiCallable,
    request: Message,
    name: str,
    accepted: tuple[grpc.StatusCode, ...] = (),
) -> Callable[[], Awaitable[None]]:
    """One call of `method` with the gateway's credentials, marked as a probe; an answer or an
    `accepted` error shows the credentials passed."""

    async def call() -> None:
        try:
            await method(request, timeout=_PROBE_TIMEOUT_S, metadata=_PROBE_METADATA, wait_for_ready=False)
        except grpc.aio.AioRpcError as exc:
            if exc.code() not in accepted:
                raise _refused(exc, name) from None

    return call


def reasoner_probe(channel: grpc.aio.Channel) -> Probe:
    """The Reasoner's health, and a Step with no messages: INVALID_ARGUMENT proves the token was accepted."""
    step = reasoner_pb2_grpc.ReasonerStub(channel).Step
    empty = reasoner_pb2.StepRequest()
    return service_probe(channel, _probe_call(step, empty, "Step", (grpc.StatusCode.INVALID_ARGUMENT,)))


def tools_probe(channel: grpc.aio.Channel) -> Probe:
    """The ToolService's health, and its tool list (ListTools needs the gateway's credentials)."""
    list_tools = tools_pb2_grpc.ToolServiceStub(channel).ListTools
    return service_probe(channel, _probe_call(list_tools, tools_pb2.ListToolsRequest(), "ListTools"))


class DependencyHealth:
    """Publishes the gateway's health from periodic probes of its dependencies."""

    def __init__(
        self, health: Health, service_name: str, probes: dict[str, Probe], interval_s: float
    ) -> None:
        self._health = health
        self._service_name = service_name
        self._probes = probes
        self._interval_s = interval_s
        self.results: dict[str, ProbeResult] = {}

    @property
    def status(self) -> dict[str, bool]:
        """Each dependency's last verdict (empty before the first check)."""
        return {name: result.ok for name, result in self.results.items()}

    async def check_once(self) -> bool:
        """Probe everything once and publish; True when all dependencies are up."""
        outcomes = await asyncio.gather(*(self._probe(p) for p in self._probes.values()))
        previous, self.results = self.results, dict(zip(self._probes, outcomes, strict=True))
        for name, result in self.results.items():
            self._log_change(name, previous.get(name), result)
            await self._health.set(name, SERVING if result.ok else NOT_SERVING, result.summary)
        down = [f"{name} {r.summary}" for name, r in self.results.items() if not r.ok]
        overall = NOT_SERVING if down else SERVING
        for name in ("", self._service_name):
            await self._health.set(name, overall, "; ".join(down))
        return not down

    @staticmethod
    async def _probe(probe: Probe) -> ProbeResult:
        try:
            await asyncio.wait_for(probe(), _CHECK_TIMEOUT_S)
        except DependencyDown as exc:
            return ProbeResult(False, exc.summary, str(exc))
        except TimeoutError:
            return ProbeResult(False, "did not answer in time", f"no answer within {_CHECK_TIMEOUT_S:g} s")
        except Exception as exc:
            return ProbeResult(False, f"failed ({type(exc).__name__})", f"{type(exc).__name__}: {exc}")
        return ProbeResult(True)

    @staticmethod
    def _log_change(name: str, before: ProbeResult | None, now: ProbeResult) -> None:
        """One line when a dependency goes down or its reason changes, one when it comes back."""
        if not now.ok and (before is None or before.detail != now.detail):
            log.warning("dependency %s is unhealthy: %s", name, now.detail)
        elif now.ok and before is not None and not before.ok:
            log.info("dependency %s is healthy again", name)

    async def run(self) -> None:
        """Probe forever (cancelled when the gateway stops)."""
        while True:
            await self.check_once()
            await asyncio.sleep(self._interval_s)
