"""The Agent gRPC service: validates a request, runs the graph, streams its events.

`Run` executes the graph in a task owned by the RPC and forwards events
through a queue, so nodes never block on a slow client; when the client goes
away the RPC is cancelled and the run task with it (no orphaned work).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator

import grpc

from agentloop.errors import AgentloopError
from agentloop.serving import ServerHandle, build_server, run_until_signal
from agentloop.settings import GatewaySettings
from agentloop.v1 import agent_pb2, agent_pb2_grpc
from gateway.catalog import ToolCatalog
from gateway.clients import Dependencies, Retry
from gateway.events import EventSink
from gateway.graph import final_event, run_graph
from gateway.nodes import RunContext
from gateway.state import RunState
from gateway.validation import RunLikeRequest, initial_messages, run_config

log = logging.getLogger(__name__)

SERVICE_NAME = agent_pb2.DESCRIPTOR.services_by_name["Agent"].full_name
_DONE = object()


class AgentService(agent_pb2_grpc.AgentServicer):
    """Serves Run and Invoke over the shared dependencies."""

    def __init__(self, settings: GatewaySettings, deps: Dependencies) -> None:
        self._settings = settings
        self._deps = deps
        self._catalog = ToolCatalog(deps.tools, settings.tools_cache_s)
        self.active_runs = 0

    async def _prepare(
        self, request: RunLikeRequest, context: grpc.aio.ServicerContext, *, streaming: bool
    ) -> tuple[RunState, RunContext]:
        config = run_config(request.options, self._settings, force_no_stream=not streaming)
        messages = initial_messages(request, config.system_prompt)
        specs = await self._catalog.select(config.tool_names, "options.tools")
        remaining = context.time_remaining()
        thread_id = request.thread_id or uuid.uuid4().hex
        state = RunState(run_id=uuid.uuid4().hex, thread_id=thread_id, user_id=request.user_id, config=config)
        ctx = RunContext(
            reasoner=self._deps.reasoner,
            tools=self._deps.tools,
            sink=EventSink(state.run_id, thread_id),
            tool_specs=specs,
            initial_messages=messages,
            step_timeout_s=self._settings.step_timeout_s,
            deadline=None if remaining is None else time.monotonic() + remaining,
        )
        return state, ctx

    async def Run(
        self, request: agent_pb2.RunRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[agent_pb2.RunResponse]:
        state, ctx = await self._prepare(request, context, streaming=True)
        queue: asyncio.Queue[object] = asyncio.Queue()
        ctx.sink = EventSink(state.run_id, state.thread_id, queue.put_nowait)
        self.active_runs += 1
        task = asyncio.create_task(run_graph(state, ctx), name=f"run-{state.run_id}")
        task.add_done_callback(lambda _: queue.put_nowait(_DONE))
        try:
            while (event := await queue.get()) is not _DONE:
                assert isinstance(event, agent_pb2.RunResponse)
                yield event
            task.result()
        finally:
            self.active_runs -= 1
            if not task.done():
                log.info("run %s: client went away, cancelling", state.run_id)
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def Invoke(
        self, request: agent_pb2.InvokeRequest, context: grpc.aio.ServicerContext
    ) -> agent_pb2.InvokeResponse:
        state, ctx = await self._prepare(request, context, streaming=False)
        self.active_runs += 1
        try:
            await run_graph(state, ctx)
        finally:
            self.active_runs -= 1
        if state.error is not None:
            code, message, node = state.error
            err = AgentloopError(f"run failed in {node}: {message}")
            err.code = grpc.StatusCode[code]
            raise err
        return agent_pb2.InvokeResponse(
            run_id=state.run_id,
            thread_id=state.thread_id,
            final=final_event(state, ctx),
            tool_results=state.tool_result_history,
        )


async def create_server(settings: GatewaySettings) -> tuple[ServerHandle, AgentService, Dependencies]:
    """Start a gateway on settings.host:settings.port (0 = any free port)."""
    deps = Dependencies(
        settings.reasoner_addr, settings.tools_addr, Retry(settings.rpc_attempts, settings.rpc_backoff_s)
    )
    service = AgentService(settings, deps)
    handle = await build_server(
        lambda server: agent_pb2_grpc.add_AgentServicer_to_server(service, server),
        [SERVICE_NAME],
        settings.host,
        settings.port,
    )
    return handle, service, deps


async def serve(settings: GatewaySettings) -> None:
    """Run a gateway until SIGINT/SIGTERM."""
    handle, _, deps = await create_server(settings)
    log.info("gateway uses reasoner at %s and tools at %s", settings.reasoner_addr, settings.tools_addr)
    await run_until_signal(handle, "gateway", on_stop=deps.close)
