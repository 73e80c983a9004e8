"""The Reasoner bounds a model call in time (the whole stream, not each read) and in bytes."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest
from google.rpc import code_pb2

from agentloop.scripted_model import Latency, Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2, common_pb2, reasoner_pb2
from tests.support.stack import Stack, start_stack
from tests.support.tools import make_registry

pytestmark = pytest.mark.integration

TRICKLE = Latency(first_token_ms=50, per_token_ms=250)  # each piece well within a read timeout
LONG_ANSWER = " ".join(f"word{i}" for i in range(30))  # 30 pieces: 7 s in all
HUGE_ANSWER = "x" * 20_000
SCRIPT = Script(
    scenarios=(
        Scenario(match="^slow$", turns=(Turn(content=LONG_ANSWER),)),
        Scenario(match="^huge$", turns=(Turn(content=HUGE_ANSWER),)),
        Scenario(
            match="^huge args$",
            turns=(Turn(tool_calls=(ScriptedToolCall("add", {"a": 1, "b": 2, "pad": HUGE_ANSWER}),)),),
        ),
    )
)


def request(text: str) -> reasoner_pb2.CompletionParams:
    return reasoner_pb2.CompletionParams(
        messages=[common_pb2.Message(role=common_pb2.ROLE_USER, content=text)],
        tools=[common_pb2.ToolSpec(name="add", parameters_json_schema='{"type": "object"}')],
    )


@pytest.fixture
async def stack() -> AsyncIterator[Stack]:
    stack = await start_stack(
        SCRIPT, make_registry()[0], reasoner_overrides={"timeout_s": 1.5, "max_completion_bytes": 4096}
    )
    try:
        yield stack
    finally:
        await stack.close()


async def _stream_error(stack: Stack, text: str) -> grpc.aio.AioRpcError:
    call = stack.reasoner_stub.StreamStep(reasoner_pb2.StreamStepRequest(params=request(text)), timeout=30)
    try:
        async for _ in call:
            pass
    except grpc.aio.AioRpcError as exc:
        return exc
    raise AssertionError("the stream ended without an error")


async def test_a_trickling_stream_is_stopped_at_the_model_timeout(stack: Stack) -> None:
    stack.model.set_script(Script(scenarios=SCRIPT.scenarios, latency=TRICKLE))
    error = await _stream_error(stack, "slow")
    assert error.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert "did not finish its answer within 1.5 s (AGENTLOOP_MODEL_TIMEOUT_S" in (error.details() or "")

    # Through the gateway the run ends with that error instead of waiting for the whole stream.
    events = await stack.run("slow", stream_mode=agent_pb2.STREAM_MODE_ALL_STEPS)
    last = events[-1]
    assert last.WhichOneof("event") == "error"
    assert last.error.code == code_pb2.DEADLINE_EXCEEDED


@pytest.mark.parametrize("text", ["huge", "huge args"])
async def test_an_oversized_completion_is_refused_streamed_or_not(stack: Stack, text: str) -> None:
    error = await _stream_error(stack, text)
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "passed 4096 bytes (AGENTLOOP_MAX_COMPLETION_BYTES)" in (error.details() or "")
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.reasoner_stub.Step(reasoner_pb2.StepRequest(params=request(text)), timeout=30)
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED

    events = await stack.run(text, stream_mode=agent_pb2.STREAM_MODE_ALL_STEPS)
    assert events[-1].WhichOneof("event") == "error"
    assert events[-1].error.code == code_pb2.RESOURCE_EXHAUSTED
