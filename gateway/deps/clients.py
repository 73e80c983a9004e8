"""The gateway's connections to the Reasoner and the ToolService: replicas, waiting and retries.

One channel per dependency for the whole process (gRPC multiplexes calls on
it). The address may name several replicas (a list or a `dns:///` name): calls
are balanced round_robin over the healthy ones. How calls behave when a
dependency goes away is set in one place, `agentloop.kernel.channels` (service
config and channel options):

- a call made while the dependency is unreachable waits for it to come back,
  up to `RetryPolicy.wait_s` (and never past the call's deadline), then fails
  UNAVAILABLE naming the dependency;
- a call that fails UNAVAILABLE before its response started is retried by
  gRPC's retry policy, on another replica when there is one;
- a stream is never retried after its first event (that would repeat what the
  client saw) — except a tool batch, which is re-issued here for the calls
  that have no result yet, so a finished tool call never runs twice.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import grpc

from agentloop.kernel.channels import service_config
from agentloop.kernel.errors import Unavailable, from_rpc_error
from agentloop.kernel.retry import RetryPolicy
from agentloop.kernel.security import bearer_interceptors
from agentloop.kernel.settings import TlsSettings
from agentloop.kernel.telemetry import trace_context_interceptors
from agentloop.kernel.tls import open_channel
from agentloop.kernel.wellknown import duration
from agentloop.v1 import common_pb2, reasoner_pb2, reasoner_pb2_grpc, tools_pb2, tools_pb2_grpc

log = logging.getLogger(__name__)

REASONER_SERVICE = "agentloop.v1.Reasoner"
TOOLS_SERVICE = "agentloop.v1.ToolService"


class Dependency:
    """One dependency's channel, with the bounded wait for it to be reachable."""

    def __init__(self, name: str, addr: str, channel: grpc.aio.Channel, retry: RetryPolicy) -> None:
        self.name = name
        self.addr = addr
        self.channel = channel
        self.retry = retry

    async def ready(self, timeout_s: float) -> float:
        """Wait until a replica is connected and healthy; returns what is left of `timeout_s`.

        gRPC would make a wait-for-ready call wait as long as its deadline (a
        model step may have minutes); this bounds the wait for a dependency
        that is down to `wait_s`, so a run fails with a clear UNAVAILABLE
        instead of hanging when the dependency does not come back.
        """
        if self.channel.get_state(try_to_connect=True) == grpc.ChannelConnectivity.READY:
            return timeout_s
        budget = min(self.retry.wait_s, timeout_s)
        started = time.monotonic()
        try:
            await asyncio.wait_for(self.channel.channel_ready(), budget)
        except TimeoutError:
            raise Unavailable(
                f"{self.name}: no replica reachable at {self.addr} (waited {budget:.1f} s)"
            ) from None
        return max(0.001, timeout_s - (time.monotonic() - started))


class ReasonerClient:
    """Step and StreamStep; waits and retries come from the channel's service config."""

    def __init__(self, dependency: Dependency) -> None:
        self._dep = dependency
        self._stub = reasoner_pb2_grpc.ReasonerStub(dependency.channel)

    async def step(
        self, params: reasoner_pb2.CompletionParams, rpc_timeout_s: float
    ) -> reasoner_pb2.StepResult:
        """One non-streamed model call."""
        request = reasoner_pb2.StepRequest(params=params)
        timeout = await self._dep.ready(rpc_timeout_s)
        try:
            response: reasoner_pb2.StepResponse = await self._stub.Step(request, timeout=timeout)
        except grpc.aio.AioRpcError as exc:
            raise from_rpc_error(exc, "reasoner") from exc
        return response.result

    async def stream_step(
        self, params: reasoner_pb2.CompletionParams, rpc_timeout_s: float
    ) -> AsyncIterator[reasoner_pb2.StreamStepResponse]:
        """One streamed model call (gRPC retries it only before its first event)."""
        request = reasoner_pb2.StreamStepRequest(params=params)
        timeout = await self._dep.ready(rpc_timeout_s)
        call = self._stub.StreamStep(request, timeout=timeout)
        try:
            async for event in call:
                yield event
        except grpc.aio.AioRpcError as exc:
            raise from_rpc_error(exc, "reasoner") from exc
        finally:
            call.cancel()

    async def list_models(self, rpc_timeout_s: float) -> reasoner_pb2.ListModelsResponse:
        """The models the Reasoner serves by name; a Reasoner without ListModels takes any name."""
        timeout = await self._dep.ready(rpc_timeout_s)
        try:
            response: reasoner_pb2.ListModelsResponse = await self._stub.ListModels(
                reasoner_pb2.ListModelsRequest(), timeout=timeout
            )
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.UNIMPLEMENTED:
                return reasoner_pb2.ListModelsResponse(any_name=True)
            raise from_rpc_error(exc, "reasoner") from exc
        return response


class ToolsClient:
    """ListTools and Execute; a broken tool batch is re-issued for its unfinished calls."""

    def __init__(self, dependency: Dependency) -> None:
        self._dep = dependency
        self._retry = dependency.retry
        self._stub = tools_pb2_grpc.ToolServiceStub(dependency.channel)

    async def list_tools(self, rpc_timeout_s: float) -> list[common_pb2.ToolSpec]:
        """Every tool the ToolService offers."""
        timeout = await self._dep.ready(rpc_timeout_s)
        try:
            response: tools_pb2.ListToolsResponse = await self._stub.ListTools(
                tools_pb2.ListToolsRequest(), timeout=timeout
            )
        except grpc.aio.AioRpcError as exc:
            raise from_rpc_error(exc, "tools") from exc
        return list(response.tools)

    async def execute(
        self,
        calls: Sequence[common_pb2.ToolCall],
        timeout_s: float,
        rpc_timeout_s: float,
        scope: str = "",
        *,
        serial: bool = False,
        injected: common_pb2.InjectedContext | None = None,
    ) -> AsyncIterator[tools_pb2.ExecuteResponse]:
        """Run a batch; after a broken stream, re-issue only the calls that have no result.

        gRPC retries a batch that failed before its first event; once events
        have arrived, only this loop knows which calls are done. Each call id
        is announced once (a re-issued call does not repeat its `started`
        event) and finishes once. All attempts share `rpc_timeout_s`.
        """
        pending = {c.id: c for c in calls}
        announced: set[str] = set()
        deadline = time.monotonic() + rpc_timeout_s
        for attempt in range(self._retry.attempts):
            request = tools_pb2.ExecuteRequest(
                calls=list(pending.values()),
                timeout=duration(timeout_s) if timeout_s else None,
                idempotency_scope=scope,
                max_concurrency=1 if serial else 0,
                injected=injected,
            )
            timeout = await self._dep.ready(max(0.001, deadline - time.monotonic()))
            call = self._stub.Execute(request, timeout=timeout)
            try:
                async for event in call:
                    if event.HasField("started"):
                        if event.started.tool_call_id in announced:
                            continue
                        announced.add(event.started.tool_call_id)
                    elif pending.pop(event.finished.tool_call_id, None) is None:
                        continue
                    yield event
                return
            except grpc.aio.AioRpcError as exc:
                if not pending or not self._retry.should_retry(exc.code(), attempt):
                    raise from_rpc_error(exc, "tools") from exc
                log.warning(
                    "tools Execute failed (%s), retrying %d unfinished calls", exc.code().name, len(pending)
                )
                await asyncio.sleep(self._retry.delay_s(attempt))
            finally:
                call.cancel()


def _open(
    name: str, addr: str, service: str, retry: RetryPolicy, tls: TlsSettings | None, interceptors: list[Any]
) -> Dependency:
    """A dependency's channel: round_robin over its replicas, with the retry policy's service config."""
    options = [("grpc.service_config", service_config([service], retry))]
    return Dependency(name, addr, open_channel(addr, tls, options, interceptors), retry)


class Dependencies:
    """The gateway's channels and clients, opened once per process."""

    def __init__(
        self,
        reasoner_addr: str,
        tools_addr: str,
        retry: RetryPolicy,
        tls: TlsSettings | None = None,
        service_token: str = "",
    ) -> None:
        # Each call carries the caller's trace context: one run is one trace across the services;
        # and the service token, when there is one, which the Reasoner and ToolService then require.
        tracing = [*trace_context_interceptors(), *bearer_interceptors(service_token)]
        self.reasoner_dependency = _open("reasoner", reasoner_addr, REASONER_SERVICE, retry, tls, tracing)
        self.tools_dependency = _open("tools", tools_addr, TOOLS_SERVICE, retry, tls, tracing)
        self.reasoner = ReasonerClient(self.reasoner_dependency)
        self.tools = ToolsClient(self.tools_dependency)

    @property
    def reasoner_channel(self) -> grpc.aio.Channel:
        return self.reasoner_dependency.channel

    @property
    def tools_channel(self) -> grpc.aio.Channel:
        return self.tools_dependency.channel

    async def close(self) -> None:
        """Close both channels."""
        await self.reasoner_dependency.channel.close()
        await self.tools_dependency.channel.close()
