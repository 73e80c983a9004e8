"""The Reasoner and the ToolService serve only callers bearing the service token, when one is set."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from agentloop.cli.demo import Child
from agentloop.scripted_model import Script
from agentloop.v1 import common_pb2, reasoner_pb2, reasoner_pb2_grpc, tools_pb2, tools_pb2_grpc
from tests.support.scripts import add_scenario
from tests.support.stack import Stack, final_of, start_stack
from tests.support.tools import make_registry

pytestmark = pytest.mark.integration

TOKEN = "s3rvice-token-for-tests"
SCRIPT = Script(scenarios=(add_scenario(2, 3, "{{tool:add}}", match="^add$"),))
STEP = reasoner_pb2.StepRequest(
    params=reasoner_pb2.CompletionParams(
        messages=[common_pb2.Message(role=common_pb2.ROLE_USER, content="hi")]
    )
)
EXECUTE = tools_pb2.ExecuteRequest(
    calls=[common_pb2.ToolCall(id="c1", name="add", arguments_json='{"a": 1, "b": 1}')],
    idempotency_scope="someone-else/0",
)
BAD_METADATA = [None, (("authorization", "Bearer wrong"),), (("authorization", f"Basic {TOKEN}"),)]


@pytest.fixture
async def stack() -> AsyncIterator[Stack]:
    stack = await start_stack(SCRIPT, make_registry()[0], service_token=TOKEN)
    try:
        yield stack
    finally:
        await stack.close()


async def _code_of(call: object) -> grpc.StatusCode:
    """The status a call ends with (it must fail)."""
    try:
        if isinstance(call, grpc.aio.UnaryStreamCall):
            [_ async for _ in call]
        else:
            await call  # type: ignore[misc]
    except grpc.aio.AioRpcError as exc:
        return exc.code()
    raise AssertionError("the call succeeded")


@pytest.mark.parametrize("metadata", BAD_METADATA, ids=["none", "wrong", "not-bearer"])
async def test_calls_without_the_token_are_unauthenticated(stack: Stack, metadata: object) -> None:
    reasoner, tools = stack.reasoner_stub, stack.tools_stub
    calls = [
        reasoner.Step(STEP, metadata=metadata, timeout=10),
        reasoner.StreamStep(
            reasoner_pb2.StreamStepRequest(params=STEP.params), metadata=metadata, timeout=10
        ),
        tools.Execute(EXECUTE, metadata=metadata, timeout=10),
        tools.ListTools(tools_pb2.ListToolsRequest(), metadata=metadata, timeout=10),
    ]
    for call in calls:
        assert await _code_of(call) == grpc.StatusCode.UNAUTHENTICATED
    assert stack.model.request_count == 0  # no model call was paid for


async def test_the_gateway_sends_the_token_and_runs_work_end_to_end(stack: Stack) -> None:
    events = await stack.run("add")
    assert final_of(events).final_reply == "5"
    bearer = (("authorization", f"Bearer {TOKEN}"),)
    step = await stack.reasoner_stub.Step(STEP, metadata=bearer, timeout=10)
    assert step.result.message.role == common_pb2.ROLE_ASSISTANT
    # Health stays open for load balancers and orchestrators.
    for port in (stack.reasoner.port, stack.tools.port):
        check = health_pb2_grpc.HealthStub(stack.channel_to(port)).Check
        response = await check(health_pb2.HealthCheckRequest(), timeout=10)
        assert response.status == health_pb2.HealthCheckResponse.SERVING


async def test_served_processes_read_the_token_from_the_environment(tmp_path: Path) -> None:
    env = dict(os.environ, AGENTLOOP_SERVICE_TOKEN=TOKEN, OPENAI_BASE_URL="http://127.0.0.1:9/v1")
    cli = [sys.executable, "-m", "agentloop.cli", "serve"]
    tools = Child("tools", [*cli, "tools", "--port", "0"], env, str(tmp_path / "tools.log"))
    try:
        reasoner = Child("reasoner", [*cli, "reasoner", "--port", "0"], env, str(tmp_path / "reasoner.log"))
        try:
            async with (
                grpc.aio.insecure_channel(f"127.0.0.1:{tools.port}") as tools_channel,
                grpc.aio.insecure_channel(f"127.0.0.1:{reasoner.port}") as reasoner_channel,
            ):
                execute = tools_pb2_grpc.ToolServiceStub(tools_channel).Execute
                step = reasoner_pb2_grpc.ReasonerStub(reasoner_channel).Step
                assert await _code_of(execute(EXECUTE, timeout=10)) == grpc.StatusCode.UNAUTHENTICATED
                assert await _code_of(step(STEP, timeout=10)) == grpc.StatusCode.UNAUTHENTICATED
                good = (("authorization", f"Bearer {TOKEN}"),)
                calculate = common_pb2.ToolCall(
                    id="c2", name="calculator", arguments_json='{"expression": "6*7"}'
                )
                request = tools_pb2.ExecuteRequest(calls=[calculate])
                results = [r async for r in execute(request, metadata=good, timeout=10)]
                assert results[-1].finished.content == "42"
        finally:
            reasoner.stop()
    finally:
        tools.stop()
