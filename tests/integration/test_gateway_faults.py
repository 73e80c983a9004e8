"""Failures around the gateway: dependencies down, retries, clients that walk away."""

from __future__ import annotations

import asyncio
import dataclasses

import grpc
import pytest
from google.rpc import code_pb2

from agentloop.kernel.serving import Server
from agentloop.kernel.settings import ReasonerSettings
from agentloop.scripted_model import Latency, Scenario, Script, Turn
from agentloop.v1 import agent_pb2
from reasoner_svc.service import create_server as create_reasoner
from tests.support.processes import free_port
from tests.support.scripts import ADD_SCENARIO
from tests.support.stack import final_of, kinds, start_stack
from tests.support.tools import make_registry
from tests.support.waiting import assert_eventually

pytestmark = pytest.mark.integration

SCRIPT = Script(
    scenarios=(
        ADD_SCENARIO,
        Scenario(match="", turns=(Turn(content=" ".join(f"word{i}" for i in range(200))),)),
    )
)


async def test_model_endpoint_down_ends_with_a_clear_error_event() -> None:
    stack = await start_stack(
        SCRIPT, make_registry()[0], reasoner_base_url=f"http://127.0.0.1:{free_port()}/v1"
    )
    try:
        events = await stack.run("hello")
        last = events[-1]
        assert last.WhichOneof("event") == "error"
        assert last.error.code == code_pb2.UNAVAILABLE
        assert last.error.node == "agent"
        assert "unreachable" in last.error.message
        assert "final" not in kinds(events)
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stack.agent.Invoke(agent_pb2.InvokeRequest(input="hello"), timeout=30)
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        await stack.close()


async def test_reasoner_service_down_past_the_wait_is_reported() -> None:
    stack = await start_stack(
        SCRIPT,
        make_registry()[0],
        reasoner_addr=f"127.0.0.1:{free_port()}",
        gateway_overrides={"rpc_attempts": 3, "rpc_wait_s": 1.0},
    )
    try:
        events = await stack.run("hello")
        assert events[-1].WhichOneof("event") == "error"
        assert events[-1].error.code == code_pb2.UNAVAILABLE
        assert events[-1].error.message.startswith("reasoner: no replica reachable at 127.0.0.1:")
    finally:
        await stack.close()


async def test_reasoner_that_comes_up_late_is_reached_by_retries() -> None:
    port = free_port()
    stack = await start_stack(
        SCRIPT,
        make_registry()[0],
        reasoner_addr=f"127.0.0.1:{port}",
        gateway_overrides={"rpc_attempts": 12, "rpc_backoff_s": 0.2},
    )
    late: list[Server] = []

    async def start_late() -> None:
        await asyncio.sleep(0.3)
        settings = dataclasses.replace(ReasonerSettings(), port=port, base_url=stack.model.base_url)
        late.append(await create_reasoner(settings))

    starter = asyncio.create_task(start_late())
    try:
        events = await stack.run("hello", deadline_s=60)
        assert final_of(events).final_reply.startswith("word0 word1")
    finally:
        await starter
        for server in late:
            await server.aclose(0)
        await stack.close()


async def test_tool_service_down_mid_conversation_reports_the_tools_node() -> None:
    overrides = {"rpc_attempts": 2, "rpc_wait_s": 1.0}
    stack = await start_stack(SCRIPT, make_registry()[0], gateway_overrides=overrides)
    try:
        assert final_of(await stack.run("add please")).final_reply == "It is 5."
        await stack.tools.aclose(0)  # the catalog is still cached; the batch itself must fail cleanly
        events = await stack.run("add please")
        assert events[-1].WhichOneof("event") == "error"
        assert events[-1].error.node == "tools"
        assert events[-1].error.code == code_pb2.UNAVAILABLE
    finally:
        await stack.close()


async def test_client_disconnect_cancels_the_run_when_asked() -> None:
    slow = Script(scenarios=SCRIPT.scenarios, latency=Latency(per_token_ms=20))
    stack = await start_stack(slow, make_registry()[0])
    try:
        request = agent_pb2.RunRequest(
            input="hello",
            options=agent_pb2.RunOptions(
                stream_mode=agent_pb2.STREAM_MODE_ALL_STEPS, cancel_on_disconnect=True
            ),
        )
        call = stack.agent.Run(request, timeout=30)
        async for response in call:
            if response.event.WhichOneof("event") == "llm_token":
                break
        assert stack.agent_service.active_runs == 1
        call.cancel()
        await assert_eventually(lambda: stack.agent_service.active_runs == 0, message="run not cancelled")
        # The gateway still serves new runs.
        fast = await stack.run("add please")
        assert final_of(fast).final_reply == "It is 5."
    finally:
        await stack.close()


async def test_run_deadline_propagates() -> None:
    slow = Script(scenarios=SCRIPT.scenarios, latency=Latency(response_ms=3000))
    stack = await start_stack(slow, make_registry()[0])
    try:
        request = agent_pb2.RunRequest(input="hello")
        with pytest.raises(grpc.aio.AioRpcError) as info:
            async for _ in stack.agent.Run(request, timeout=0.5):
                pass
        assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        await assert_eventually(lambda: stack.agent_service.active_runs == 0)
    finally:
        await stack.close()
