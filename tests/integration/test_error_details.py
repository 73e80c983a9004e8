"""Every error of the real services carries google.rpc.Status details a client can branch on.

Read the way any gRPC client reads them: grpcio-status decodes the
`grpc-status-details-bin` trailer of the failed call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from agentloop.kernel.errors import ERROR_DOMAIN
from agentloop.scripted_model import Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2, common_pb2, reasoner_pb2
from tests.support.stack import Stack, start_stack
from tests.support.tools import make_registry

pytestmark = pytest.mark.integration

SCRIPT = Script(
    scenarios=(
        Scenario(
            match="slow tool",
            turns=(Turn(tool_calls=(ScriptedToolCall("sleep_for", {"seconds": 30}),)), Turn(content="done")),
        ),
        Scenario(match="", turns=(Turn(content="ok"),)),
    )
)


@pytest.fixture
async def stack() -> AsyncIterator[Stack]:
    registry, _ = make_registry()
    # Every run here comes from one caller: its share is the whole gateway.
    overrides = {"max_active_runs": 2, "max_active_runs_per_caller": 2}
    stack = await start_stack(SCRIPT, registry, gateway_overrides=overrides)
    try:
        yield stack
    finally:
        await stack.close()


def status_of(error: grpc.aio.AioRpcError) -> status_pb2.Status:
    """The google.rpc.Status of a failed call; fails the test when the trailer is missing."""
    status = rpc_status.from_call(error)
    assert status is not None, f"no grpc-status-details-bin on {error.code().name}: {error.details()}"
    assert status.code == error.code().value[0]
    return status


def detail(status: status_pb2.Status, kind: type[Message]) -> Message:
    """The one detail of `kind` in `status`."""
    found = [d for d in status.details if d.Is(kind.DESCRIPTOR)]
    assert len(found) == 1, f"expected one {kind.DESCRIPTOR.name} in {status}"
    message = kind()
    found[0].Unpack(message)
    return message


async def slow_run(stack: Stack, thread_id: str) -> str:
    """Start a run that sits in a 30 s tool; returns its run id once the tool started."""
    call = stack.agent.Run(agent_pb2.RunRequest(input="slow tool", thread_id=thread_id, user_id="ana"))
    async for response in call:
        if response.event.WhichOneof("event") == "tool_start":
            return response.event.run_id
    raise AssertionError("the slow run ended before its tool started")


async def test_a_bad_field_comes_with_a_bad_request_naming_it(stack: Stack) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.agent.GetThread(agent_pb2.GetThreadRequest(thread_id="", user_id="ana"))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    bad = detail(status_of(info.value), error_details_pb2.BadRequest)
    assert isinstance(bad, error_details_pb2.BadRequest)
    assert [v.field for v in bad.field_violations] == ["thread_id"]
    assert bad.field_violations[0].description


async def test_the_reasoner_names_a_bad_nested_field(stack: Stack) -> None:
    request = reasoner_pb2.StepRequest(
        params=reasoner_pb2.CompletionParams(messages=[common_pb2.Message(content="no role")])
    )
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.reasoner_stub.Step(request)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    bad = detail(status_of(info.value), error_details_pb2.BadRequest)
    assert isinstance(bad, error_details_pb2.BadRequest)
    assert bad.field_violations[0].field.startswith("params.messages[0]")


async def test_a_busy_thread_is_thread_busy(stack: Stack) -> None:
    run_id = await slow_run(stack, "t-busy")
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.run("hello", thread_id="t-busy", user_id="ana")
    assert info.value.code() == grpc.StatusCode.ABORTED
    info_ = detail(status_of(info.value), error_details_pb2.ErrorInfo)
    assert isinstance(info_, error_details_pb2.ErrorInfo)
    assert (info_.reason, info_.domain) == ("THREAD_BUSY", ERROR_DOMAIN)
    assert info_.metadata["thread_id"] == "t-busy"
    await stack.agent.Cancel(agent_pb2.CancelRequest(run_id=run_id, user_id="ana"), timeout=15)


async def test_an_unknown_run_is_run_not_found(stack: Stack) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.agent.Cancel(agent_pb2.CancelRequest(run_id="no-such-run", user_id="ana"))
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    info_ = detail(status_of(info.value), error_details_pb2.ErrorInfo)
    assert isinstance(info_, error_details_pb2.ErrorInfo)
    assert info_.reason == "RUN_NOT_FOUND"
    assert info_.metadata["run_id"] == "no-such-run"


async def test_too_many_runs_says_when_to_retry(stack: Stack) -> None:
    run_ids = [await slow_run(stack, "t-first"), await slow_run(stack, "t-second")]
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.run("hello", thread_id="t-third", user_id="ana")
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    status = status_of(info.value)
    retry = detail(status, error_details_pb2.RetryInfo)
    assert isinstance(retry, error_details_pb2.RetryInfo)
    assert retry.retry_delay.ToNanoseconds() > 0
    reason = detail(status, error_details_pb2.ErrorInfo)
    assert isinstance(reason, error_details_pb2.ErrorInfo)
    assert reason.reason == "TOO_MANY_RUNS"
    for run_id in run_ids:
        await stack.agent.Cancel(agent_pb2.CancelRequest(run_id=run_id, user_id="ana"), timeout=15)
