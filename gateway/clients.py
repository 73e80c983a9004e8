"""The gateway's connections to the Reasoner and the ToolService, with retries.

One channel per dependency for the whole process (gRPC multiplexes calls on
it). A call that fails with UNAVAILABLE is retried with exponential backoff
and full jitter, but only while retrying cannot duplicate anything visible:
a stream is retried only before its first event, and a tool batch is
re-issued only for the calls that have no result yet.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TypeVar

import grpc

from agentloop.errors import from_rpc_error
from agentloop.security import TlsSettings, bearer_interceptors, open_channel
from agentloop.serving import CHANNEL_OPTIONS
from agentloop.telemetry import trace_context_interceptors
from agentloop.v1 import common_pb2, reasoner_pb2, reasoner_pb2_grpc, tools_pb2, tools_pb2_grpc

log = logging.getLogger(__name__)

T = TypeVar("T")
RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE})
_MAX_BACKOFF_S = 5.0


class Retry:
    """Attempts and backoff for calls to a dependency."""

    def __init__(self, attempts: int, backoff_s: float) -> None:
        self.attempts = max(1, attempts)
        self.backoff_s = backoff_s

    def should_retry(self, exc: grpc.aio.AioRpcError, attempt: int) -> bool:
        """Whether a failed attempt (0-based) is worth another try."""
        return exc.code() in RETRYABLE and attempt + 1 < self.attempts

    async def unary(self, call: Callable[[], Awaitable[T]], service: str, what: str) -> T:
        """Run a unary call, retrying UNAVAILABLE; a final failure becomes the service's typed error."""
        for attempt in range(self.attempts):
            try:
                return await call()
            except grpc.aio.AioRpcError as exc:
                if not self.should_retry(exc, attempt):
                    raise from_rpc_error(exc, service) from exc
                log.warning("%s %s failed (%s), retrying", service, what, exc.code().name)
                await self.sleep(attempt)
        raise AssertionError("unreachable")

    async def sleep(self, attempt: int) -> None:
        """Full-jitter exponential backoff before attempt `attempt + 1`."""
        cap = min(_MAX_BACKOFF_S, self.backoff_s * (2**attempt))
        await asyncio.sleep(random.uniform(0, cap))


class ReasonerClient:
    """Step and StreamStep with retries on UNAVAILABLE."""

    def __init__(self, channel: grpc.aio.Channel, retry: Retry) -> None:
        self._stub = reasoner_pb2_grpc.ReasonerStub(channel)
        self._retry = retry

    async def step(
        self, params: reasoner_pb2.CompletionParams, rpc_timeout_s: float
    ) -> reasoner_pb2.StepResult:
        """One non-streamed model call."""
        request = reasoner_pb2.StepRequest(params=params)
        response: reasoner_pb2.StepResponse = await self._retry.unary(
            lambda: self._stub.Step(request, timeout=rpc_timeout_s), "reasoner", "Step"
        )
        return response.result

    async def stream_step(
        self, params: reasoner_pb2.CompletionParams, rpc_timeout_s: float
    ) -> AsyncIterator[reasoner_pb2.StreamStepResponse]:
        """One streamed model call; retried only if it failed before its first event."""
        request = reasoner_pb2.StreamStepRequest(params=params)
        for attempt in range(self._retry.attempts):
            started = False
            call = self._stub.StreamStep(request, timeout=rpc_timeout_s)
            try:
                async for event in call:
                    started = True
                    yield event
                return
            except grpc.aio.AioRpcError as exc:
                if started or not self._retry.should_retry(exc, attempt):
                    raise from_rpc_error(exc, "reasoner") from exc
                log.warning("reasoner StreamStep failed (%s), retrying", exc.code().name)
                await self._retry.sleep(attempt)
            finally:
                call.cancel()


class ToolsClient:
    """ListTools and Execute with retries on UNAVAILABLE."""

    def __init__(self, channel: grpc.aio.Channel, retry: Retry) -> None:
        self._stub = tools_pb2_grpc.ToolServiceStub(channel)
        self._retry = retry

    async def list_tools(self, rpc_timeout_s: float) -> list[common_pb2.ToolSpec]:
        """Every tool the ToolService offers."""
        response: tools_pb2.ListToolsResponse = await self._retry.unary(
            lambda: self._stub.ListTools(tools_pb2.ListToolsRequest(), timeout=rpc_timeout_s),
            "tools",
            "ListTools",
        )
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

        Each call id is announced once (a re-issued call does not repeat its
        `started` event) and finishes once.
        """
        pending = {c.id: c for c in calls}
        announced: set[str] = set()
        for attempt in range(self._retry.attempts):
            request = tools_pb2.ExecuteRequest(
                calls=list(pending.values()),
                timeout_seconds=timeout_s,
                idempotency_scope=scope,
                max_concurrency=1 if serial else 0,
                injected=injected,
            )
            call = self._stub.Execute(request, timeout=rpc_timeout_s)
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
                if not pending or not self._retry.should_retry(exc, attempt):
                    raise from_rpc_error(exc, "tools") from exc
                log.warning(
                    "tools Execute failed (%s), retrying %d unfinished calls", exc.code().name, len(pending)
                )
                await self._retry.sleep(attempt)
            finally:
                call.cancel()


class Dependencies:
    """The gateway's channels and clients, opened once per process."""

    def __init__(
        self,
        reasoner_addr: str,
        tools_addr: str,
        retry: Retry,
        tls: TlsSettings | None = None,
        service_token: str = "",
    ) -> None:
        # Each call carries the caller's trace context: one run is one trace across the services;
        # and the service token, when there is one, which the Reasoner and ToolService then require.
        tracing = [*trace_context_interceptors(), *bearer_interceptors(service_token)]
        self._reasoner_channel = open_channel(reasoner_addr, tls, CHANNEL_OPTIONS, tracing)
        self._tools_channel = open_channel(tools_addr, tls, CHANNEL_OPTIONS, tracing)
        self.reasoner = ReasonerClient(self._reasoner_channel, retry)
        self.tools = ToolsClient(self._tools_channel, retry)

    @property
    def reasoner_channel(self) -> grpc.aio.Channel:
        return self._reasoner_channel

    @property
    def tools_channel(self) -> grpc.aio.Channel:
        return self._tools_channel

    async def close(self) -> None:
        """Close both channels."""
        await self._reasoner_channel.close()
        await self._tools_channel.close()
