"""Requests protobuf decodes but no handler can use, or cannot decode at all, are INVALID_ARGUMENT.

Through the real services: unknown enum values (Invoke's stream_mode, the
Reasoner's tool choice), Durations outside their own rules (nanos of 2e9,
mixed signs), a Struct nested past protobuf's decoding limit, a number JSON
cannot carry, and bytes that are not UTF-8 — each refused with the field's
path, the way a client in any language reads it (status details included).
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import grpc
import pytest
from google.protobuf.message import Message
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from agentloop.v1 import agent_pb2, common_pb2, reasoner_pb2, tools_pb2
from tests.support.stack import Stack, start_stack

pytestmark = pytest.mark.integration


@pytest.fixture
async def stack() -> AsyncIterator[Stack]:
    stack = await start_stack()
    try:
        yield stack
    finally:
        await stack.close()


async def refused(call: Awaitable[Any]) -> tuple[str, str]:
    """(BadRequest field, message) of a call that must fail INVALID_ARGUMENT."""
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call
    error = info.value
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, (error.code(), error.details())
    status = rpc_status.from_call(error)
    assert status is not None
    bad = error_details_pb2.BadRequest()
    [packed] = [d for d in status.details if d.Is(error_details_pb2.BadRequest.DESCRIPTOR)]
    packed.Unpack(bad)
    [violation] = bad.field_violations
    assert (error.details() or "").startswith(f"{violation.field}: ")
    return violation.field, error.details() or ""


def nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"type": "object"}
    for _ in range(levels):
        value = {"type": "object", "properties": {"x": value}}
    return value


async def test_invoke_refuses_an_unknown_stream_mode(stack: Stack) -> None:
    for stub_call in (
        stack.agent.Invoke,
        lambda r: drained(stack.agent.Run(agent_pb2.RunRequest(**fields(r)))),
    ):
        request = agent_pb2.InvokeRequest(input="hi", options=agent_pb2.RunOptions(stream_mode=99))  # type: ignore[arg-type]
        field, message = await refused(stub_call(request))
        assert field == "options.stream_mode"
        assert "99" in message
    request = agent_pb2.InvokeRequest(input="hi", options=agent_pb2.RunOptions(concurrency=7))  # type: ignore[arg-type]
    assert (await refused(stack.agent.Invoke(request)))[0] == "options.concurrency"
    request = agent_pb2.InvokeRequest(input="hi", history=[common_pb2.Message(role=12, content="x")])  # type: ignore[arg-type]
    assert (await refused(stack.agent.Invoke(request)))[0] == "history[0].role"


async def test_durations_outside_their_rules_are_refused(stack: Stack) -> None:
    for seconds, nanos in ((0, 2_000_000_000), (1, -5), (-1, 5), (10**12, 0)):
        options = agent_pb2.RunOptions()
        options.tool_timeout.seconds, options.tool_timeout.nanos = seconds, nanos
        request = agent_pb2.InvokeRequest(input="hi", options=options)
        field, _ = await refused(stack.agent.Invoke(request))
        assert field == "options.tool_timeout", (seconds, nanos)
    execute = tools_pb2.ExecuteRequest(calls=[common_pb2.ToolCall(id="c", name="calculator")])
    execute.timeout.seconds, execute.timeout.nanos = 2, -1
    field, _ = await refused(drained(stack.tools_stub.Execute(execute)))
    assert field == "timeout"


async def test_the_reasoner_refuses_an_unknown_tool_choice(stack: Stack) -> None:
    params = reasoner_pb2.CompletionParams(
        messages=[common_pb2.Message(role=common_pb2.ROLE_USER, content="hi")]
    )
    params.tool_choice.mode = 42  # type: ignore[assignment]
    field, _ = await refused(stack.reasoner_stub.Step(reasoner_pb2.StepRequest(params=params)))
    assert field == "params.tool_choice.mode"


async def test_a_struct_nested_past_protobufs_limit_is_invalid_argument(stack: Stack) -> None:
    for levels in (17, 40, 150):  # 35 JSON levels and more
        # Built in place: protobuf refuses to copy a message this deep, as the gateway refuses to decode it.
        request = agent_pb2.InvokeRequest(input="hi")
        request.options.output_schema.update(nested(levels))
        field, message = await refused(stack.agent.Invoke(request))
        assert field == "options.output_schema", levels
        assert "nests deeper" in message
        run = agent_pb2.RunRequest(input="hi")
        run.options.output_schema.update(nested(levels))
        assert (await refused(drained(stack.agent.Run(run))))[0] == "options.output_schema"
    options = agent_pb2.RunOptions()
    options.output_schema.update(nested(15))  # 31 JSON levels: decodes, and is a usable schema
    events = await drained(stack.agent.Run(agent_pb2.RunRequest(input="hi", options=options)))
    assert events[-1].WhichOneof("event") in ("final", "error")


async def test_a_number_json_cannot_carry_is_refused(stack: Stack) -> None:
    for number in (math.nan, math.inf):
        options = agent_pb2.RunOptions()
        options.output_schema.update({"type": "object", "maxProperties": number})
        request = agent_pb2.InvokeRequest(input="hi", options=options)
        field, _ = await refused(stack.agent.Invoke(request))
        assert field == "options.output_schema"


async def test_text_that_is_not_utf8_names_its_field(stack: Stack) -> None:
    raw = agent_pb2.InvokeRequest(input="hi", thread_id="t1").SerializeToString().replace(b"hi", b"h\xff")
    invoke = stack.channel.unary_unary(
        "/agentloop.v1.Agent/Invoke",
        request_serializer=lambda data: data,
        response_deserializer=agent_pb2.InvokeResponse.FromString,
    )
    field, _ = await refused(invoke(raw))
    assert field == "input"
    garbage = invoke(b"\x0a\x7f")  # a string field that claims 127 bytes and has none
    assert (await refused(garbage))[0] == "input"


async def drained(call: Any) -> list[Any]:
    return [response.event async for response in call]


def fields(message: Message) -> dict[str, Any]:
    return {f.name: v for f, v in message.ListFields()}
