"""What every request of every service must be before a handler sees it, whatever the message type.

Protobuf accepts some wire data that no handler can use, or refuses it in a
way no client can act on:

- proto3 enums are open: `stream_mode = 99` decodes, and code that compares
  against known values quietly treats it as something else;
- a `google.protobuf.Duration` decodes with nanos of 2e9, or seconds and
  nanos of opposite signs, which the type's own contract forbids;
- a `google.protobuf.Value` may hold NaN or infinity, which JSON cannot
  carry (turning the Struct into JSON raises deep inside a handler);
- a message nested past protobuf's decoding limit (a Struct ~33 JSON levels
  deep), or a string that is not UTF-8, does not decode at all, and grpc
  then ends the call UNKNOWN before any interceptor runs.

`check_request` finds the first problem of a decoded request and
`undecodable` says where a request that does not decode goes wrong; both
answer with an InvalidArgument whose field is the request field's path
(`options.stream_mode`, `options.output_schema`). Every server runs them
through `agentloop.kernel.handlers.wrap_handler`, so one rule holds for all
services and all fields, including fields added later.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, cast

from google.protobuf import duration_pb2, struct_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from agentloop.kernel.errors import InvalidArgument

DECODE_DEPTH_LIMIT = 100
"""How deeply messages may nest on the wire (protobuf's own decoding limit, upb and C++ alike)."""
MAX_DURATION_SECONDS = 315_576_000_000
"""The range of google.protobuf.Duration: ±10,000 years."""
_NANOS = 999_999_999
_DURATION = duration_pb2.Duration.DESCRIPTOR.full_name
_JSON_TYPES = frozenset(d.full_name for d in (struct_pb2.Struct.DESCRIPTOR, struct_pb2.Value.DESCRIPTOR))
_JSON_TYPES |= {struct_pb2.ListValue.DESCRIPTOR.full_name}


@dataclass(frozen=True, slots=True)
class _Check:
    """One field of a message type that holds something to check (directly or further down)."""

    name: str
    kind: str  # "enum", "duration", "json" or "message"
    repeated: bool = False
    map: bool = False
    allowed: frozenset[int] = frozenset()
    inner: tuple[_Check, ...] = ()
    """For "message": the checks of the field's message type."""
    enums: tuple[tuple[str, frozenset[int]], ...] | None = None
    """For "message": (name, allowed) of each check when all are single enums (a conversation's roles)."""


def check_request(request: Message) -> InvalidArgument | None:
    """The first unknown enum value, invalid Duration or non-JSON number of `request`, or None."""
    found = _first_problem(request, _plan(request.DESCRIPTOR))
    return None if found is None else InvalidArgument(*found)


Problem = tuple[str, str]
"""(field path relative to the message checked, what is wrong with it)."""


def _first_problem(message: Message, plan: tuple[_Check, ...]) -> Problem | None:
    # The hot path of every request (a conversation of hundreds of messages): plain loops, and a
    # path is spelled only for the one field found wrong.
    for check in plan:
        name = check.name
        if check.map:
            # Maps of message values (no map of the contract holds enums or Durations today).
            for key, value in getattr(message, name).items():
                if (found := _value_problem(check, value)) is not None:
                    return _under(f'{name}["{key}"]', found)
        elif check.repeated:
            if (found := _repeated_problem(check, getattr(message, name))) is not None:
                return found
        elif check.kind == "enum":
            if (value := getattr(message, name)) not in check.allowed:
                return name, f"unknown value {value}"
        elif message.HasField(name) and (found := _value_problem(check, getattr(message, name))) is not None:
            return _under(name, found)
    return None


def _repeated_problem(check: _Check, values: Any) -> Problem | None:
    name = check.name
    if check.kind == "enum":
        allowed = check.allowed
        for i, number in enumerate(values):
            if number not in allowed:
                return f"{name}[{i}]", f"unknown value {number}"
    elif check.enums is not None:
        enums = check.enums
        for i, value in enumerate(values):
            for field, allowed in enums:
                if (number := getattr(value, field)) not in allowed:
                    return f"{name}[{i}].{field}", f"unknown value {number}"
    else:
        for i, value in enumerate(values):
            if (found := _value_problem(check, value)) is not None:
                return _under(f"{name}[{i}]", found)
    return None


def _under(path: str, found: Problem) -> Problem:
    inner, problem = found
    return (f"{path}.{inner}" if inner else path), problem


def _value_problem(check: _Check, value: Message) -> Problem | None:
    if check.kind == "message":
        return _first_problem(value, check.inner)
    if check.kind == "duration":
        assert isinstance(value, duration_pb2.Duration)
        problem = duration_problem(value)
        return None if problem is None else ("", problem)
    if _finite(value):
        return None
    return "", "holds a number JSON cannot carry (NaN or infinity)"


def duration_problem(value: duration_pb2.Duration) -> str | None:
    """Why `value` breaks google.protobuf.Duration's rules (range, nanos, one sign), or None."""
    if not -MAX_DURATION_SECONDS <= value.seconds <= MAX_DURATION_SECONDS:
        return f"is not a valid Duration: seconds must be within ±{MAX_DURATION_SECONDS}"
    if not -_NANOS <= value.nanos <= _NANOS:
        return f"is not a valid Duration: nanos must be within ±{_NANOS}"
    if (value.seconds > 0 and value.nanos < 0) or (value.seconds < 0 and value.nanos > 0):
        return "is not a valid Duration: seconds and nanos must have the same sign"
    return None


def _finite(value: Message) -> bool:
    """Whether every number in a Struct, Value or ListValue is finite (iteratively: no recursion)."""
    pending: list[Message] = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, struct_pb2.Struct):
            pending.extend(item.fields.values())
        elif isinstance(item, struct_pb2.ListValue):
            pending.extend(item.values)
        elif isinstance(item, struct_pb2.Value):
            kind = item.WhichOneof("kind")
            if kind == "number_value" and not math.isfinite(item.number_value):
                return False
            if kind == "struct_value":
                pending.append(item.struct_value)
            elif kind == "list_value":
                pending.append(item.list_value)
    return True


def _is_map(field: FieldDescriptor) -> bool:
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def _target(field: FieldDescriptor) -> Descriptor | None:
    """The message type a field holds (a map's value type); None for scalars and enums."""
    target = field.message_type
    if target is not None and _is_map(field):
        target = target.fields_by_name["value"].message_type
    return target


@functools.cache
def _plan(descriptor: Descriptor) -> tuple[_Check, ...]:
    """The fields of a message type worth visiting; empty for a type with nothing to check below it.

    Computed once per type, so a request pays only for the fields that can be
    wrong (a conversation's roles, a timeout), never for text.
    """
    return _plan_of(descriptor, frozenset())


def _plan_of(descriptor: Descriptor, visiting: frozenset[str]) -> tuple[_Check, ...]:
    checks: list[_Check] = []
    for field in descriptor.fields:
        repeated, is_map = field.is_repeated, _is_map(field)
        if field.enum_type is not None:
            allowed = frozenset(v.number for v in field.enum_type.values)
            checks.append(_Check(field.name, "enum", repeated, allowed=allowed))
            continue
        target = _target(field)
        if target is None:
            continue  # a scalar, or a map of scalars
        if target.full_name == _DURATION:
            checks.append(_Check(field.name, "duration", repeated, is_map))
        elif target.full_name in _JSON_TYPES:
            checks.append(_Check(field.name, "json", repeated, is_map))
        elif target.full_name not in visiting:
            inner = _plan_of(target, visiting | {descriptor.full_name})
            if inner:
                only_enums = all(c.kind == "enum" and not c.repeated for c in inner)
                enums = tuple((c.name, c.allowed) for c in inner) if only_enums else None
                checks.append(_Check(field.name, "message", repeated, is_map, inner=inner, enums=enums))
    return tuple(checks)


# --- requests that do not decode -------------------------------------------------------------


class _Malformed(Exception):
    """The bytes end inside a field: not protobuf wire data."""


def undecodable(message_type: type[Message], data: bytes) -> InvalidArgument:
    """Why `data` does not decode as `message_type`, naming the field where it goes wrong.

    Called only after protobuf refused the bytes. The walk follows the wire
    format with the descriptors, one nesting level at a time up to protobuf's
    own limit (so it cannot recurse deeper than the decoder would), and stops
    at the first field that is nested too deeply or a string that is not
    UTF-8. Inside a Struct the field named is the Struct's own
    (`options.output_schema`), not a path hundreds of levels long.
    """
    descriptor = cast(Descriptor, message_type.DESCRIPTOR)
    try:
        found = _walk(descriptor, memoryview(data), "", 1, None)
    except _Malformed as exc:
        return InvalidArgument(str(exc) or "request", f"is not valid {descriptor.full_name} wire data")
    if found is not None:
        return found
    return InvalidArgument("request", f"does not decode as {descriptor.full_name}")


def _walk(
    descriptor: Descriptor, data: memoryview, prefix: str, depth: int, json_root: str | None
) -> InvalidArgument | None:
    counts: dict[int, int] = {}
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos, prefix)
        number, wire_type = key >> 3, key & 7
        field = descriptor.fields_by_number.get(number)
        path = prefix.rstrip(".") or "request"
        if field is not None:
            index = counts.get(number, 0)
            counts[number] = index + 1
            indexed = field.is_repeated and not _is_map(field)
            path = f"{prefix}{field.name}" + (f"[{index}]" if indexed else "")
        if wire_type == 0:
            _, pos = _varint(data, pos, path)
        elif wire_type == 1 or wire_type == 5:
            pos += 8 if wire_type == 1 else 4
        elif wire_type == 2:
            length, pos = _varint(data, pos, path)
            chunk = data[pos : pos + length]
            if len(chunk) < length:
                raise _Malformed(path)
            pos += length
            if field is None:
                continue
            if field.type == FieldDescriptor.TYPE_STRING:
                try:
                    str(chunk, "utf-8")
                except UnicodeDecodeError:
                    return InvalidArgument(path, "is not valid UTF-8")
            elif (inner := field.message_type) is not None:
                root = json_root
                if root is None and inner.full_name in _JSON_TYPES:
                    root = path
                if depth + 1 > DECODE_DEPTH_LIMIT:
                    return InvalidArgument(
                        root or path,
                        f"nests deeper than the {DECODE_DEPTH_LIMIT} levels of messages protobuf decodes"
                        + (" (about 30 levels of JSON)" if root is not None else ""),
                    )
                found = _walk(inner, chunk, f"{path}.", depth + 1, root)
                if found is not None:
                    return found
        else:
            raise _Malformed(path)  # groups (3, 4) are not proto3; 6 and 7 do not exist
        if pos > len(data):
            raise _Malformed(path)
    return None


def _varint(data: memoryview, pos: int, path: str) -> tuple[int, int]:
    value = shift = 0
    while pos < len(data) and shift < 70:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
    raise _Malformed(path.rstrip(".") or "request")
