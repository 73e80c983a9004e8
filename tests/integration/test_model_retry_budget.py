"""One budget of model requests per step, counted at the model: gateway → Reasoner → scripted model.

The Reasoner makes at most 1 + AGENTLOOP_MODEL_MAX_RETRIES requests for a step (3 by default)
and answers with gRPC server pushback once it is done, so the gateway's channel, which retries
UNAVAILABLE calls to a Reasoner that is away, does not send the step again: a persistent 500
costs 3 requests, not the SDK's 3 times the channel's 4.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator

import grpc
import pytest
from google.rpc import code_pb2, error_details_pb2

from agentloop.kernel.errors import status_from_metadata
from agentloop.kernel.settings import ReasonerSettings
from agentloop.scripted_model import Fault, Recording, Scenario, Script, ScriptedModelServer, Turn
from agentloop.testing import kinds, running_stack
from agentloop.v1 import agent_pb2, common_pb2, reasoner_pb2, reasoner_pb2_grpc
from reasoner_svc.service import create_server
from tests.support.recordings import DIRECTORY

pytestmark = pytest.mark.integration

BUDGET = 3
"""Requests per step with the default AGENTLOOP_MODEL_MAX_RETRIES=2."""

RATE_LIMITED = Recording.from_file(DIRECTORY / "openrouter-429-provider-error.http")
ERROR_EVENT = Recording.from_file(DIRECTORY / "groq-error-event-tool-use-failed.http")
BAD_REQUEST = Recording.from_file(DIRECTORY / "openai-400-unsupported-value.http")
# An upstream failure reported inside a 200 stream before any token, in OpenRouter's
# documented shape (written for this test, not a recording).
UPSTREAM_DOWN = Recording(
    headers=(("content-type", "text/event-stream"),),
    body='data: {"id":"gen-1","object":"chat.completion.chunk","choices":[],'
    '"error":{"code":502,"message":"Provider returned error","metadata":{"raw":"upstream overloaded"}}}\n\n',
)


def _with_retry_after(seconds: str) -> Recording:
    """The recorded 429, with the Retry-After header the tests need."""
    return dataclasses.replace(RATE_LIMITED, headers=(*RATE_LIMITED.headers, ("retry-after", seconds)))


def _replaying(recording: Recording) -> Script:
    return Script(scenarios=(Scenario(match="", turns=(Turn(replay=recording),)),))


async def _run_error(script: Script, stream_mode: int) -> tuple[agent_pb2.RunError, int]:
    async with running_stack(script, reasoner_overrides={"max_retries": BUDGET - 1}) as stack:
        events = await stack.run("What is the weather?", deadline_s=60, stream_mode=stream_mode)
        assert kinds(events)[-1] == "error", kinds(events)
        return events[-1].error, stack.model.request_count


STREAMED = agent_pb2.STREAM_MODE_FINAL_ONLY
UNARY = agent_pb2.STREAM_MODE_NONE


@pytest.mark.parametrize("stream_mode", [STREAMED, UNARY], ids=["streamed", "unary"])
async def test_a_persistent_500_costs_one_budget_of_requests(stream_mode: int) -> None:
    error, requests = await _run_error(Script(faults=(Fault("status", status=500, times=100),)), stream_mode)
    assert error.code == code_pb2.UNAVAILABLE
    assert "500" in error.message
    assert requests == BUDGET


async def test_a_429_is_retried_after_its_retry_after_within_the_budget() -> None:
    error, requests = await _run_error(_replaying(_with_retry_after("1")), STREAMED)
    assert error.code == code_pb2.RESOURCE_EXHAUSTED
    assert "temporarily rate-limited upstream" in error.message  # the provider's own words
    assert requests == BUDGET


async def test_an_error_event_inside_a_stream_is_mapped_by_its_code_and_not_retried() -> None:
    error, requests = await _run_error(_replaying(ERROR_EVENT), STREAMED)
    assert error.code == code_pb2.INVALID_ARGUMENT
    assert "Tool call validation failed" in error.message
    assert requests == 1


async def test_an_upstream_failure_inside_a_stream_before_any_token_is_retried() -> None:
    error, requests = await _run_error(_replaying(UPSTREAM_DOWN), STREAMED)
    assert error.code == code_pb2.UNAVAILABLE
    assert "upstream overloaded" in error.message
    assert requests == BUDGET


async def test_a_400_is_never_retried() -> None:
    error, requests = await _run_error(_replaying(BAD_REQUEST), UNARY)
    assert error.code == code_pb2.INVALID_ARGUMENT
    assert "does not support 'system'" in error.message
    assert requests == 1


async def test_a_transient_500_is_answered_within_the_budget() -> None:
    script = Script(
        scenarios=(Scenario(match="", turns=(Turn(content="Sunny."),)),),
        faults=(Fault("status", status=503, times=BUDGET - 1),),
    )
    async with running_stack(script, reasoner_overrides={"max_retries": BUDGET - 1}) as stack:
        events = await stack.run("What is the weather?", deadline_s=60)
        assert events[-1].final.final_reply == "Sunny."
        assert stack.model.request_count == BUDGET


async def _reasoner(
    script: Script, **settings: object
) -> AsyncIterator[tuple[ScriptedModelServer, reasoner_pb2_grpc.ReasonerStub]]:
    async with ScriptedModelServer(script) as model:
        fields = {"port": 0, "base_url": model.base_url, **settings}
        server = await create_server(dataclasses.replace(ReasonerSettings(), **fields))  # type: ignore[arg-type]
        async with server, grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            yield model, reasoner_pb2_grpc.ReasonerStub(channel)


def _retry_delay_s(error: grpc.aio.AioRpcError) -> float:
    for detail in status_from_metadata(error.trailing_metadata() or ()).details:
        if detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            info = error_details_pb2.RetryInfo()
            detail.Unpack(info)
            return info.retry_delay.ToTimedelta().total_seconds()
    raise AssertionError("no RetryInfo")


async def test_a_long_retry_after_is_left_to_the_caller_as_retry_info() -> None:
    async for model, stub in _reasoner(_replaying(_with_retry_after("120"))):
        params = reasoner_pb2.CompletionParams(
            messages=[common_pb2.Message(role=common_pb2.ROLE_USER, content="hi")]
        )
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stub.Step(reasoner_pb2.StepRequest(params=params), timeout=30)
        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert _retry_delay_s(info.value) == 120
        assert model.request_count == 1


async def test_the_budget_is_a_setting() -> None:
    async for model, stub in _reasoner(
        Script(faults=(Fault("status", status=502, times=100),)), max_retries=4
    ):
        params = reasoner_pb2.CompletionParams(
            messages=[common_pb2.Message(role=common_pb2.ROLE_USER, content="hi")]
        )
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stub.Step(reasoner_pb2.StepRequest(params=params), timeout=60)
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        assert model.request_count == 5
        body = json.dumps(model.requests[0])
        assert "stream" not in json.loads(body)


async def _call(stub: reasoner_pb2_grpc.ReasonerStub, streamed: bool) -> None:
    params = reasoner_pb2.CompletionParams(
        messages=[common_pb2.Message(role=common_pb2.ROLE_USER, content="hi")]
    )
    if streamed:
        async for _ in stub.StreamStep(reasoner_pb2.StreamStepRequest(params=params), timeout=30):
            pass
    else:
        await stub.Step(reasoner_pb2.StepRequest(params=params), timeout=30)


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "unary"])
async def test_an_answer_that_cannot_be_read_is_a_clear_error_and_not_retried(streamed: bool) -> None:
    body = 'data: {"choices": "nope"}\n\n' if streamed else '{"choices": [{"message": {"content": 3}}]}'
    kind = "text/event-stream" if streamed else "application/json"
    recording = Recording(headers=(("content-type", kind),), body=body)
    async for model, stub in _reasoner(_replaying(recording)):
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await _call(stub, streamed)
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        message = info.value.details() or ""
        assert model.base_url in message
        assert ("choices is a string" if streamed else "content is a number") in message
        assert model.request_count == 1
