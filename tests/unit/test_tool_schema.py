"""Schema derivation: what the model is shown for each kind of Python signature."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, Optional, TypedDict

import pytest

from tool_svc import Tool, ToolContext
from tool_svc.schema import parse_docstring


def params(fn: Any) -> dict[str, Any]:
    return Tool(fn).parameters


class Unit(enum.Enum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclass
class Address:
    """Where a parcel goes.

    Attributes:
        city: The city name.
        zip_code: Postal code, if known.
    """

    city: str
    zip_code: str | None = None


@dataclass
class Parcel:
    address: Address
    weight_kg: float
    tags: list[str] = field(default_factory=list)
    note: str | None = None


class Filters(TypedDict):
    country: str
    min_total: NotRequired[float]


class Node:
    """A plain class: not something JSON can carry."""


@dataclass
class TreeNode:
    children: list[TreeNode]


def test_scalars_map_to_json_types_and_are_required_in_order() -> None:
    def fn(name: str, count: int, ratio: float, enabled: bool) -> None:
        """Scalars."""

    schema = params(fn)
    assert schema["properties"] == {
        "name": {"type": "string"},
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "enabled": {"type": "boolean"},
    }
    assert schema["required"] == ["name", "count", "ratio", "enabled"]
    assert schema["additionalProperties"] is False
    assert schema["type"] == "object"


def test_containers() -> None:
    def fn(ids: list[int], scores: dict[str, float], anything: list, mapping: dict) -> None:  # type: ignore[type-arg]
        """Containers."""

    props = params(fn)["properties"]
    assert props["ids"] == {"type": "array", "items": {"type": "integer"}}
    assert props["scores"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert props["anything"] == {"type": "array"}
    assert props["mapping"] == {"type": "object"}


def test_nested_containers() -> None:
    def fn(matrix: list[list[float]], groups: dict[str, list[str]]) -> None:
        """Nested."""

    props = params(fn)["properties"]
    assert props["matrix"] == {"type": "array", "items": {"type": "array", "items": {"type": "number"}}}
    assert props["groups"]["additionalProperties"] == {"type": "array", "items": {"type": "string"}}


def test_literal_becomes_enum() -> None:
    def fn(mode: Literal["fast", "slow"], level: Literal[1, 2, 3], mixed: Literal["a", 1]) -> None:
        """Literals."""

    props = params(fn)["properties"]
    assert props["mode"] == {"type": "string", "enum": ["fast", "slow"]}
    assert props["level"] == {"type": "integer", "enum": [1, 2, 3]}
    assert props["mixed"] == {"type": ["string", "integer"], "enum": ["a", 1]}


def test_enum_subclasses_become_enums_of_their_values() -> None:
    def fn(unit: Unit, priority: Priority = Priority.LOW) -> None:
        """Enums."""

    schema = params(fn)
    assert schema["properties"]["unit"] == {"type": "string", "enum": ["celsius", "fahrenheit"]}
    assert schema["properties"]["priority"] == {"type": "integer", "enum": [1, 2], "default": 1}
    assert schema["required"] == ["unit"]


@pytest.mark.parametrize("annotation", ["int | None", "Optional[int]"])
def test_optional_is_nullable_and_not_required(annotation: str) -> None:
    namespace: dict[str, Any] = {"Optional": Optional}
    exec(f"def fn(limit: {annotation}) -> None:\n    'Optional.'", namespace)
    schema = params(namespace["fn"])
    assert schema["properties"]["limit"] == {"type": ["integer", "null"]}
    assert "required" not in schema


def test_optional_literal_and_enum_accept_null() -> None:
    def fn(mode: Literal["a", "b"] | None, unit: Unit | None = None) -> None:
        """Nullable enums."""

    props = params(fn)["properties"]
    assert props["mode"] == {"type": ["string", "null"], "enum": ["a", "b", None]}
    assert props["unit"] == {
        "type": ["string", "null"],
        "enum": ["celsius", "fahrenheit", None],
        "default": None,
    }


def test_defaults_are_advertised_and_not_required() -> None:
    def ok(query: str, limit: int = 10, ratio: float = 0.5, verbose: bool = False) -> None:
        """Defaults."""

    schema = params(ok)
    assert schema["required"] == ["query"]
    assert schema["properties"]["limit"] == {"type": "integer", "default": 10}
    assert schema["properties"]["ratio"] == {"type": "number", "default": 0.5}
    assert schema["properties"]["verbose"] == {"type": "boolean", "default": False}


def test_default_without_a_json_form_is_not_advertised() -> None:
    sentinel = object()

    def fn(value: dict[str, int] = sentinel) -> None:  # type: ignore[assignment]
        """Odd default."""

    assert params(fn)["properties"]["value"] == {
        "type": "object",
        "additionalProperties": {"type": "integer"},
    }


def test_dataclass_parameter_becomes_a_nested_object() -> None:
    def fn(parcel: Parcel) -> None:
        """Ship it."""

    parcel = params(fn)["properties"]["parcel"]
    assert parcel["type"] == "object"
    assert parcel["required"] == ["address", "weight_kg"]
    assert parcel["additionalProperties"] is False
    assert parcel["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}
    assert parcel["properties"]["note"] == {"type": ["string", "null"], "default": None}
    address = parcel["properties"]["address"]
    assert address["description"] == "Where a parcel goes."
    assert address["properties"]["city"] == {"type": "string", "description": "The city name."}
    assert address["required"] == ["city"]


def test_typed_dict_parameter_uses_its_required_keys() -> None:
    def fn(filters: Filters) -> None:
        """Filter."""

    filters = params(fn)["properties"]["filters"]
    assert filters == {
        "type": "object",
        "properties": {"country": {"type": "string"}, "min_total": {"type": "number"}},
        "required": ["country"],
        "additionalProperties": False,
    }


def test_tool_context_is_hidden_from_the_schema() -> None:
    def fn(query: str, ctx: ToolContext) -> None:
        """Uses the context."""

    def optional_ctx(query: str, context: ToolContext | None = None) -> None:
        """Uses the context when called by the executor."""

    for tool in (Tool(fn), Tool(optional_ctx)):
        assert list(tool.parameters["properties"]) == ["query"]
        assert tool.parameters["required"] == ["query"]
    assert Tool(fn).context_param == "ctx"
    assert Tool(optional_ctx).context_param == "context"


def test_google_docstring_gives_description_and_parameter_descriptions() -> None:
    def fn(city: str, days: int = 3) -> None:
        """Get the weather forecast for a city.

        Use it when the user asks about upcoming weather.

        Args:
            city (str): The city, e.g. "Paris". Continued
                on a second line.
            days: How many days ahead.

        Returns:
            The forecast.
        """

    tool = Tool(fn)
    assert tool.description == (
        "Get the weather forecast for a city.\n\nUse it when the user asks about upcoming weather."
    )
    assert tool.parameters["properties"]["city"]["description"] == (
        'The city, e.g. "Paris". Continued on a second line.'
    )
    assert tool.parameters["properties"]["days"] == {
        "type": "integer",
        "default": 3,
        "description": "How many days ahead.",
    }


def test_rest_docstring_parameters() -> None:
    def fn(city: str, days: int) -> None:
        """Forecast.

        :param city: The city
            name.
        :param int days: Days ahead.
        :returns: the forecast.
        """

    tool = Tool(fn)
    assert tool.description == "Forecast."
    assert tool.parameters["properties"]["city"]["description"] == "The city name."
    assert tool.parameters["properties"]["days"]["description"] == "Days ahead."


def test_missing_docstring_gives_empty_description() -> None:
    def fn(x: int) -> None:
        pass

    assert Tool(fn).description == ""
    assert "description" not in Tool(fn).parameters["properties"]["x"]


def test_parse_docstring_stops_the_section_at_a_dedent() -> None:
    doc = parse_docstring("Summary.\n\nArgs:\n    a: first.\n\nSome trailing text.\n")
    assert doc.description == "Summary."
    assert dict(doc.params) == {"a": "first."}


def test_spec_json_is_the_parameters_schema() -> None:
    def fn(a: int) -> None:
        """A."""

    tool = Tool(fn)
    assert json.loads(tool.spec().parameters_json_schema) == tool.parameters


def _set_param(values: set[int]) -> None:
    """Sets have no JSON form."""


def _int_keys(values: dict[int, str]) -> None:
    """JSON keys are strings."""


def _union(value: int | str) -> None:
    """General unions are refused."""


def _plain_class(node: Node) -> None:
    """Arbitrary classes are refused."""


def _unannotated(value) -> None:  # type: ignore[no-untyped-def]
    """No annotation."""


def _var_args(*values: int) -> None:
    """*args cannot be named in JSON."""


def _var_kwargs(**values: int) -> None:
    """**kwargs are not described."""


def _recursive(tree: TreeNode) -> None:
    """Self-referential types never end."""


def _tuple(values: tuple[str, ...]) -> None:
    """Tuples are not supported; use list."""


@pytest.mark.parametrize(
    ("fn", "parameter", "reason"),
    [
        (_set_param, "values", "set"),
        (_int_keys, "values", "dict keys must be str"),
        (_union, "value", "only 'X | None' unions"),
        (_plain_class, "node", "Node is not a supported annotation"),
        (_unannotated, "value", "no type annotation"),
        (_var_args, "values", "variadic positional"),
        (_var_kwargs, "values", "variadic keyword"),
        (_recursive, "tree", "recursive types"),
        (_tuple, "values", "tuple"),
    ],
)
def test_unsupported_signatures_fail_registration(fn: Any, parameter: str, reason: str) -> None:
    with pytest.raises(TypeError) as raised:
        Tool(fn)
    message = str(raised.value)
    assert fn.__name__ in message
    assert repr(parameter) in message
    assert reason in message


@dataclass
class Bad:
    where: Node


def test_unsupported_dataclass_field_names_the_field() -> None:
    def fn(bad: Bad) -> None:
        """Bad field."""

    with pytest.raises(TypeError, match=r"parameter 'bad': field Bad\.where: Node is not a supported"):
        Tool(fn)
