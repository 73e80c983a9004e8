"""Requests protobuf decodes but no handler can use, or cannot decode at all, are INVALID_ARGUMENT.

Through the real services: unknown enum values (Invoke's stream_mode, the
Reasoner's tool choice), Durations outside their own rules (nanos of 2e9,
mixed signs), a Struct nested past protobuf's decoding limit, a number JSON
cannot carry, and bytes that are not UTF-8 — each refused with the field's
path, the way a client in any language reads it (status details included).
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Awaitable, Iterator
from typing import Any

import grpc
import pytest
from google.api import field_behavior_pb2
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from agentloop.scripted_model import Script
from agentloop.v1 import agent_pb2, common_pb2, reasoner_pb2, tools_pb2
from tests.support.scripts import ADD_SCENARIO
from tests.support.stack import Stack, start_stack

pytestmark = pytest.mark.integration


@pytest.fixture
async def stack() -> AsyncIterator[Stack]:
    stack = await start_stack(Script(scenarios=(ADD_SCENARIO,)))
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


# --- fields the contract marks REQUIRED ------------------------------------------------------------


def required(field: FieldDescriptor) -> bool:
    behaviors = field.GetOptions().Extensions[field_behavior_pb2.field_behavior]
    return field_behavior_pb2.REQUIRED in behaviors


def required_paths(message: Message, prefix: str = "") -> Iterator[tuple[str, Message, FieldDescriptor]]:
    """(path, holder, field) of every REQUIRED field in `message` and the messages set in it."""
    for field in message.DESCRIPTOR.fields:
        path = f"{prefix}{field.name}"
        if required(field):
            yield path, message, field
        if field.message_type is None or field.message_type.GetOptions().map_entry:
            continue
        if field.is_repeated:
            for i, item in enumerate(getattr(message, field.name)):
                yield from required_paths(item, f"{path}[{i}].")
        elif message.HasField(field.name):
            yield from required_paths(getattr(message, field.name), f"{path}.")


def every_required_field() -> set[tuple[str, str]]:
    """(message type, field) of every REQUIRED field reachable from a request of the contract."""
    found: set[tuple[str, str]] = set()
    seen: set[str] = set()
    pending = [
        method.input_type
        for module in (agent_pb2, reasoner_pb2, tools_pb2)
        for service in module.DESCRIPTOR.services_by_name.values()
        for method in service.methods
    ]
    while pending:
        descriptor = pending.pop()
        if descriptor.full_name in seen:
            continue
        seen.add(descriptor.full_name)
        for field in descriptor.fields:
            if required(field):
                found.add((descriptor.full_name, field.name))
            if field.message_type is not None:
                pending.append(field.message_type)
    return found


async def test_every_required_field_left_out_is_invalid_argument_naming_it(stack: Stack) -> None:
    """Each REQUIRED annotation is what the services enforce: leaving the field out names it."""
    paused = await drained(
        stack.agent.Run(
            agent_pb2.RunRequest(
                input="add 2 and 3", user_id="ana", options=agent_pb2.RunOptions(require_approval=["add"])
            )
        )
    )
    interrupt = next(e for e in paused if e.WhichOneof("event") == "interrupt")
    decision = agent_pb2.ApprovalDecision(
        tool_call_id=interrupt.interrupt.pending[0].id, verdict=agent_pb2.ApprovalDecision.VERDICT_APPROVE
    )
    user = common_pb2.Message(role=common_pb2.ROLE_USER, content="hi")
    params = reasoner_pb2.CompletionParams(messages=[user], tools=[common_pb2.ToolSpec(name="calculator")])
    # One otherwise valid request per method (the paused run's for Resume's decisions).
    requests: dict[str, tuple[Any, Message]] = {
        "Run": (stack.agent.Run, agent_pb2.RunRequest(input="hi", history=[user])),
        "Invoke": (stack.agent.Invoke, agent_pb2.InvokeRequest(input="hi", history=[user])),
        "GetThread": (stack.agent.GetThread, agent_pb2.GetThreadRequest(thread_id=interrupt.thread_id)),
        "ListCheckpoints": (
            stack.agent.ListCheckpoints,
            agent_pb2.ListCheckpointsRequest(thread_id=interrupt.thread_id),
        ),
        "Resume": (
            stack.agent.Resume,
            agent_pb2.ResumeRequest(run_id=interrupt.run_id, user_id="ana", decisions=[decision]),
        ),
        "Cancel": (stack.agent.Cancel, agent_pb2.CancelRequest(run_id="r")),
        "Watch": (stack.agent.Watch, agent_pb2.WatchRequest(run_id="r")),
        "DeleteMemory": (stack.agent.DeleteMemory, agent_pb2.DeleteMemoryRequest(memory_id="m")),
        "ListRuns": (stack.agent.ListRuns, agent_pb2.ListRunsRequest(thread_id="t")),
        "ForkThread": (
            stack.agent.ForkThread,
            agent_pb2.ForkThreadRequest(thread_id="t", checkpoint_id="r:0"),
        ),
        "Step": (stack.reasoner_stub.Step, reasoner_pb2.StepRequest(params=params)),
        "StreamStep": (stack.reasoner_stub.StreamStep, reasoner_pb2.StreamStepRequest(params=params)),
        "Execute": (
            stack.tools_stub.Execute,
            tools_pb2.ExecuteRequest(calls=[common_pb2.ToolCall(id="c", name="calculator")]),
        ),
    }
    covered: set[tuple[str, str]] = set()
    for method, (call, request) in requests.items():
        for path, _, _ in list(required_paths(request)):
            incomplete = type(request)()
            incomplete.CopyFrom(request)
            holder, field = next((h, f) for p, h, f in required_paths(incomplete) if p == path)
            holder.ClearField(field.name)
            covered.add((holder.DESCRIPTOR.full_name, field.name))
            outcome = call(incomplete)
            name, _ = await refused(outcome if not hasattr(outcome, "__aiter__") else drained_raw(outcome))
            assert name == path or name.startswith(f"{path}."), (method, path, name)
    assert covered == every_required_field(), sorted(every_required_field() - covered)
    assert len(covered) >= 15


async def drained_raw(call: Any) -> list[Any]:
    return [response async for response in call]
