"""Every enum and Duration field of every request of the contract is checked, named by its path.

The fields are found from the descriptors, so a field added to the protos is
covered (and tested) without anyone listing it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from google.protobuf import duration_pb2, struct_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message
from google.protobuf.message_factory import GetMessageClass

from agentloop.kernel.request_checks import DECODE_DEPTH_LIMIT, check_request, undecodable
from agentloop.v1 import agent_pb2, common_pb2, reasoner_pb2, tools_pb2

_JSON = {d.full_name for d in (struct_pb2.Struct.DESCRIPTOR, struct_pb2.Value.DESCRIPTOR)}
_DURATION = duration_pb2.Duration.DESCRIPTOR.full_name


def request_types() -> list[Descriptor]:
    found = {
        method.input_type.full_name: method.input_type
        for module in (agent_pb2, reasoner_pb2, tools_pb2)
        for service in module.DESCRIPTOR.services_by_name.values()
        for method in service.methods
    }
    return list(found.values())


def leaves(
    descriptor: Descriptor, path: tuple[FieldDescriptor, ...] = ()
) -> Iterator[tuple[FieldDescriptor, ...]]:
    """Paths (as field chains) to every enum and Duration field below `descriptor`."""
    for field in descriptor.fields:
        chain = (*path, field)
        if field.enum_type is not None:
            yield chain
        elif field.message_type is not None and not field.message_type.GetOptions().map_entry:
            name = field.message_type.full_name
            if name == _DURATION:
                yield chain
            elif name not in _JSON and all(f.message_type is not field.message_type for f in path):
                yield from leaves(field.message_type, chain)


def spelled(chain: tuple[FieldDescriptor, ...]) -> str:
    return ".".join(f.name + ("[0]" if f.is_repeated else "") for f in chain)


def with_bad_leaf(descriptor: Descriptor, chain: tuple[FieldDescriptor, ...]) -> Message:
    request = GetMessageClass(descriptor)()
    target: Message = request
    for field in chain[:-1]:
        target = getattr(target, field.name).add() if field.is_repeated else getattr(target, field.name)
    leaf = chain[-1]
    if leaf.enum_type is not None:
        bad = max(v.number for v in leaf.enum_type.values) + 1
        if leaf.is_repeated:
            getattr(target, leaf.name).append(bad)
        else:
            setattr(target, leaf.name, bad)
    else:
        duration = getattr(target, leaf.name).add() if leaf.is_repeated else getattr(target, leaf.name)
        duration.nanos = 2_000_000_000
    return request


CASES = [
    pytest.param(descriptor, chain, id=f"{descriptor.name}.{spelled(chain)}")
    for descriptor in request_types()
    for chain in leaves(descriptor)
]


def test_the_contract_has_enum_and_duration_fields_in_requests() -> None:
    names = {param.id for param in CASES}
    assert {"InvokeRequest.options.stream_mode", "ExecuteRequest.timeout"} <= names, sorted(names)


@pytest.mark.parametrize(("descriptor", "chain"), CASES)
def test_a_bad_value_is_refused_naming_its_path(
    descriptor: Descriptor, chain: tuple[FieldDescriptor, ...]
) -> None:
    error = check_request(with_bad_leaf(descriptor, chain))
    assert error is not None
    assert error.field == spelled(chain)


@pytest.mark.parametrize(("descriptor", "chain"), CASES)
def test_known_values_pass(descriptor: Descriptor, chain: tuple[FieldDescriptor, ...]) -> None:
    request = with_bad_leaf(descriptor, chain)
    request.Clear()
    assert check_request(request) is None


def test_a_valid_conversation_passes() -> None:
    params = reasoner_pb2.CompletionParams(
        messages=[common_pb2.Message(role=common_pb2.ROLE_USER, content=f"m{i}") for i in range(200)],
        tool_choice=common_pb2.ToolChoice(mode=common_pb2.TOOL_CHOICE_MODE_AUTO),
    )
    assert check_request(reasoner_pb2.StepRequest(params=params)) is None
    params.messages[150].role = 9  # type: ignore[assignment]
    error = check_request(reasoner_pb2.StepRequest(params=params))
    assert error is not None
    assert error.field == "params.messages[150].role"


def test_a_struct_too_deep_to_decode_is_named_by_its_own_field() -> None:
    request = agent_pb2.RunRequest(input="hi")
    value: dict[str, object] = {}
    for _ in range(DECODE_DEPTH_LIMIT):
        value = {"a": value}
    request.options.output_schema.update(value)
    data = request.SerializeToString()
    with pytest.raises(DecodeError):
        agent_pb2.RunRequest.FromString(data)
    error = undecodable(agent_pb2.RunRequest, data)
    assert error.field == "options.output_schema"


def test_repeated_fields_are_named_with_their_index() -> None:
    request = agent_pb2.RunRequest(
        input="hi", history=[common_pb2.Message(role=common_pb2.ROLE_USER, content="x") for _ in range(3)]
    )
    data = request.SerializeToString()
    bad = data[: data.rindex(b"x")] + b"\xff" + data[data.rindex(b"x") + 1 :]
    assert undecodable(agent_pb2.RunRequest, bad).field == "history[2].content"
