"""The contract's well-known types ⇄ Python values: Struct for well-formed JSON, Duration for times.

Struct stores every number as a double, so a schema's `"maxLength": 64`
comes back as 64.0. Integral doubles are turned back into ints here: the
JSON a tool schema or a structured answer is rendered as must not change
`64` into `64.0` on its way through the contract.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import duration_pb2, json_format, struct_pb2


def _integral(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


def struct_to_dict(value: struct_pb2.Struct) -> dict[str, Any]:
    """The JSON object a Struct holds, integral numbers as ints."""
    result: dict[str, Any] = _integral(json_format.MessageToDict(value))
    return result


def dict_to_struct(value: dict[str, Any]) -> struct_pb2.Struct:
    """A Struct holding the JSON object `value`."""
    struct = struct_pb2.Struct()
    struct.update(value)
    return struct


def duration(seconds: float) -> duration_pb2.Duration:
    """A Duration of `seconds` (nanosecond precision)."""
    value = duration_pb2.Duration()
    value.FromNanoseconds(round(seconds * 1e9))
    return value


def seconds(value: duration_pb2.Duration) -> float:
    """A Duration in seconds."""
    return value.ToNanoseconds() / 1e9
