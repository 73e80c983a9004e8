"""The Reasoner over real gRPC, driving the real openai client against the scripted model over HTTP."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator

import grpc
import pytest

from agentloop.kernel.settings import ReasonerSettings
from agentloop.scripted_model import (
    Fault,
    Latency,
    Scenario,
    Script,
    ScriptedModelServer,
    ScriptedToolCall,
    Turn,
)
from agentloop.v1 import common_pb2, reasoner_pb2, reasoner_pb2_grpc
from reasoner_svc.service import create_server
from tests.support.net import free_port

pytestmark = pytest.mark.integration

TOOLS = [
    common_pb2.ToolSpec(
        name="calculator",
        description="Evaluate arithmetic.",
        parameters_json_schema=json.dumps(
            {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}
        ),
    ),
    common_pb2.ToolSpec(name="current_time", description="Now.", parameters_json_schema='{"type": "object"}'),
]

SCRIPT = Script(
    scenarios=(
        Scenario(
            match="tools please",
            turns=(
                Turn(
                    reasoning="Two tools at once.",
                    tool_calls=(
                        ScriptedToolCall("calculator", {"expression": "2 + 2"}),
                        ScriptedToolCall("current_time", {}),
                    ),
                ),
            ),
            final_text="No tools allowed, so here is my answer.",
        ),
        Scenario(match="", turns=(Turn(content="The quick brown fox jumps.", reasoning="Thinking hard."),)),
    )
)


class Harness:
    def __init__(self, model: ScriptedModelServer, stub: reasoner_pb2_grpc.ReasonerStub) -> None:
        self.model = model
        self.stub = stub


async def _start(base_url: str, **overrides: object) -> AsyncIterator[reasoner_pb2_grpc.ReasonerStub]:
    fields: dict[str, object] = {"port": 0, "base_url": base_url, "max_retries": 0, **overrides}
    settings = dataclasses.replace(ReasonerSettings(), **fields)  # type: ignore[arg-type]
    server = await create_server(settings)
    async with server, grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        yield reasoner_pb2_grpc.ReasonerStub(channel)


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    async with ScriptedModelServer(SCRIPT) as model:
        async for stub in _start(model.base_url):
            yield Harness(model, stub)


def _params(text: str, tools: bool = True, **kw: object) -> reasoner_pb2.CompletionParams:
    params = reasoner_pb2.CompletionParams(
        messages=[
            common_pb2.Message(role=common_pb2.ROLE_SYSTEM, content="Be brief."),
            common_pb2.Message(role=common_pb2.ROLE_USER, content=text),
        ],
        **kw,  # type: ignore[arg-type]
    )
    if tools:
        params.tools.extend(TOOLS)
    return params


async def test_step_returns_parallel_tool_calls(harness: Harness) -> None:
    reply = await harness.stub.Step(reasoner_pb2.StepRequest(params=_params("tools please")), timeout=10)
    calls = reply.result.message.tool_calls
    assert [(c.name, json.loads(c.arguments_json)) for c in calls] == [
        ("calculator", {"expression": "2 + 2"}),
        ("current_time", {}),
    ]
    assert len({c.id for c in calls}) == 2
    assert reply.result.finish_reason == "tool_calls"
    assert reply.result.message.reasoning_content == "Two tools at once."
    assert reply.result.usage.total_tokens > 0
    sent = harness.model.requests[-1]
    assert sent["model"] == "scripted"
    assert [t["function"]["name"] for t in sent["tools"]] == ["calculator", "current_time"]


async def test_step_with_tool_choice_none_answers_in_text(harness: Harness) -> None:
    params = _params("tools please", tool_choice=common_pb2.ToolChoice(mode=common_pb2.TOOL_CHOICE_MODE_NONE))
    reply = await harness.stub.Step(reasoner_pb2.StepRequest(params=params), timeout=10)
    assert reply.result.message.content == "No tools allowed, so here is my answer."
    assert not reply.result.message.tool_calls
    assert harness.model.requests[-1]["tool_choice"] == "none"


async def test_stream_step_streams_reasoning_then_tokens_then_result(harness: Harness) -> None:
    events = [e async for e in harness.stub.StreamStep(reasoner_pb2.StreamStepRequest(params=_params("hi")))]
    kinds = [e.WhichOneof("event") for e in events]
    assert kinds[-1] == "result"
    assert kinds.count("result") == 1
    tokens = "".join(e.token for e in events if e.WhichOneof("event") == "token")
    reasoning = "".join(e.reasoning_token for e in events if e.WhichOneof("event") == "reasoning_token")
    assert tokens == "The quick brown fox jumps."
    assert kinds.count("token") >= 5  # really streamed piece by piece
    assert reasoning == "Thinking hard."
    assert kinds.index("reasoning_token") < kinds.index("token")
    result = events[-1].result
    assert result.message.content == tokens
    assert result.usage.completion_tokens > 0
    assert result.finish_reason == "stop"


async def test_stream_step_assembles_tool_call_deltas(harness: Harness) -> None:
    events = [
        e
        async for e in harness.stub.StreamStep(reasoner_pb2.StreamStepRequest(params=_params("tools please")))
    ]
    result = events[-1].result
    assert [c.name for c in result.message.tool_calls] == ["calculator", "current_time"]
    assert json.loads(result.message.tool_calls[0].arguments_json) == {"expression": "2 + 2"}
    assert result.finish_reason == "tool_calls"


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (reasoner_pb2.StepRequest(), "params.messages"),
        (
            reasoner_pb2.StepRequest(
                params=reasoner_pb2.CompletionParams(messages=[common_pb2.Message(content="no role")])
            ),
            "params.messages[0].role",
        ),
    ],
)
async def test_invalid_request_names_the_field(
    harness: Harness, request_: reasoner_pb2.StepRequest, field: str
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await harness.stub.Step(request_, timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (info.value.details() or "").startswith(field + ":")
    with pytest.raises(grpc.aio.AioRpcError) as info:
        async for _ in harness.stub.StreamStep(reasoner_pb2.StreamStepRequest(params=request_.params)):
            pass
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.parametrize(
    ("fault", "code"),
    [
        (Fault("status", status=429, times=5), grpc.StatusCode.RESOURCE_EXHAUSTED),
        (Fault("status", status=500, times=5), grpc.StatusCode.UNAVAILABLE),
        (Fault("status", status=400), grpc.StatusCode.INVALID_ARGUMENT),
        (Fault("status", status=401), grpc.StatusCode.FAILED_PRECONDITION),
        (Fault("malformed_json"), grpc.StatusCode.UNAVAILABLE),
    ],
)
async def test_endpoint_errors_map_to_status(harness: Harness, fault: Fault, code: grpc.StatusCode) -> None:
    harness.model.set_script(dataclasses.replace(SCRIPT, faults=(fault,)))
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await harness.stub.Step(reasoner_pb2.StepRequest(params=_params("hi")), timeout=10)
    assert info.value.code() == code
    assert info.value.details()


async def test_broken_sse_stream_is_unavailable(harness: Harness) -> None:
    harness.model.set_script(dataclasses.replace(SCRIPT, faults=(Fault("broken_stream"),)))
    with pytest.raises(grpc.aio.AioRpcError) as info:
        async for _ in harness.stub.StreamStep(reasoner_pb2.StreamStepRequest(params=_params("hi"))):
            pass
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_429_is_retried_by_the_client_then_succeeds() -> None:
    script = dataclasses.replace(SCRIPT, faults=(Fault("status", status=429, times=1),))
    async with ScriptedModelServer(script) as model:
        async for stub in _start(model.base_url, max_retries=2):
            reply = await stub.Step(reasoner_pb2.StepRequest(params=_params("hi")), timeout=10)
            assert reply.result.message.content == "The quick brown fox jumps."
            assert model.request_count == 2


async def test_endpoint_unreachable_is_unavailable() -> None:
    async for stub in _start(f"http://127.0.0.1:{free_port()}/v1"):
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stub.Step(reasoner_pb2.StepRequest(params=_params("hi")), timeout=10)
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "unreachable" in (info.value.details() or "")


async def test_caller_deadline_is_honoured() -> None:
    slow = dataclasses.replace(SCRIPT, latency=Latency(response_ms=3000))
    async with ScriptedModelServer(slow) as model:
        async for stub in _start(model.base_url):
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await stub.Step(reasoner_pb2.StepRequest(params=_params("hi")), timeout=0.5)
            assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
