"""Registry, @tool decorator, argument validation messages and user-module loading."""

from __future__ import annotations

import enum
import json
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentloop.v1 import common_pb2
from tool_svc import NextStep, Tool, ToolContext, ToolRegistry, tool
from tool_svc.loader import ToolModuleError, load_modules
from tool_svc.registry import ArgumentError, tool_options

MALFORMED = common_pb2.TOOL_ERROR_KIND_MALFORMED_ARGUMENTS
INVALID = common_pb2.TOOL_ERROR_KIND_INVALID_ARGUMENTS


class Shape(enum.Enum):
    CIRCLE = "circle"
    SQUARE = "square"


@dataclass
class Size:
    width: int
    height: float = 1.0


@tool
def area(shape: Shape, size: Size, scale: float = 1.0, label: str | None = None) -> str:
    """Compute an area."""
    return f"{shape.value} {size} {scale} {label}"


@tool(name="search-docs", description="Search the docs.", timeout_s=2.5)
async def search(query: str, limit: int = 5, ctx: ToolContext | None = None) -> list[str]:
    """Docstring that the explicit description overrides."""
    return [query] * limit


def make(*fns: Any) -> ToolRegistry:
    return ToolRegistry(fns)


def bind_error(tool_: Tool, arguments_json: str) -> ArgumentError:
    with pytest.raises(ArgumentError) as raised:
        tool_.bind(arguments_json)
    return raised.value


def test_decorator_keeps_the_function_callable() -> None:
    assert area(Shape.CIRCLE, Size(2)) == "circle Size(width=2, height=1.0) 1.0 None"
    options = tool_options(search)
    assert options is not None
    assert (options.name, options.description, options.timeout_s) == ("search-docs", "Search the docs.", 2.5)
    assert tool_options(make) is None


def test_decorator_options_are_applied_at_registration() -> None:
    registered = ToolRegistry().register(search)
    assert registered.name == "search-docs"
    assert registered.description == "Search the docs."
    assert registered.timeout_s == 2.5
    assert registered.is_async
    assert not Tool(area).is_async


def test_undecorated_functions_can_be_registered() -> None:
    def ping() -> str:
        """Answer pong."""
        return "pong"

    registry = ToolRegistry()
    registry.register(ping)
    tool_ = registry.get("ping")
    assert tool_ is not None
    assert tool_.description == "Answer pong."
    assert tool_.timeout_s is None


def test_get_len_contains() -> None:
    registry = make(area, search)
    assert len(registry) == 2
    assert "area" in registry
    assert "search-docs" in registry
    assert registry.get("nope") is None
    assert registry.names() == ("area", "search-docs")


def test_duplicate_names_are_refused() -> None:
    registry = make(area)
    with pytest.raises(ValueError, match="'area' is already registered"):
        registry.register(area)
    with pytest.raises(ValueError, match="'area' is already registered"):
        registry.register(Tool(area))


@pytest.mark.parametrize("name", ["has space", "trailing-newline\n", "a" * 65, "dots.not.allowed", "ünicode"])
def test_invalid_names_are_refused(name: str) -> None:
    def fn() -> None:
        """No-op."""

    with pytest.raises(ValueError, match="must match"):
        Tool(fn, name=name)


@pytest.mark.parametrize("timeout_s", [0, -1.0])
def test_non_positive_timeouts_are_refused(timeout_s: float) -> None:
    with pytest.raises(ValueError, match="timeout_s must be > 0"):
        tool(timeout_s=timeout_s)


def test_specs_are_sorted_and_filtered() -> None:
    def zeta() -> None:
        """Z."""

    def alpha() -> None:
        """A."""

    registry = make(zeta, alpha, area)
    assert [spec.name for spec in registry.specs()] == ["alpha", "area", "zeta"]
    assert [spec.name for spec in registry.specs(["zeta", "alpha", "unknown"])] == ["alpha", "zeta"]
    assert registry.specs([]) == []
    spec = registry.specs(["area"])[0]
    assert spec.description == "Compute an area."
    assert json.loads(spec.parameters_json_schema) == Tool(area).parameters


CHECK_OK = NextStep(on="success", next_step="run_sql", hint="The query is valid: run it with sql_query.")
CHECK_FAILED = NextStep(
    on="error", next_step="fix_sql", hint="Read the error, fix the query and check it again."
)


@tool(next_steps=[CHECK_OK, CHECK_FAILED], requires_approval=True)
def check(query: str) -> str:
    """Check a query."""
    return query


def test_next_steps_and_approval_are_published_in_the_spec() -> None:
    spec = Tool(check).spec()
    assert [(rule.trigger, rule.next_step, rule.hint) for rule in spec.next_steps] == [
        (common_pb2.NEXT_STEP_TRIGGER_SUCCESS, "run_sql", "The query is valid: run it with sql_query."),
        (common_pb2.NEXT_STEP_TRIGGER_ERROR, "fix_sql", "Read the error, fix the query and check it again."),
    ]
    assert spec.requires_approval
    assert list(spec.injected_parameters) == []
    assert Tool(check).next_steps == (CHECK_OK, CHECK_FAILED)


def test_tools_have_no_rules_and_need_no_approval_by_default() -> None:
    spec = Tool(area).spec()
    assert list(spec.next_steps) == []
    assert not spec.requires_approval


def test_tool_arguments_override_the_decorator_options() -> None:
    built = Tool(check, next_steps=[], requires_approval=False)
    assert built.next_steps == ()
    assert not built.requires_approval
    assert Tool(area, next_steps=(CHECK_OK,), requires_approval=True).spec().requires_approval


def test_next_step_is_frozen() -> None:
    with pytest.raises(AttributeError):
        CHECK_OK.on = "error"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"on": "done"}, "NextStep.on must be 'success' or 'error', got 'done'"),
        ({"on": "Success"}, "NextStep.on must be 'success' or 'error'"),
        ({"next_step": ""}, "NextStep.next_step must match"),
        ({"next_step": "run sql"}, "NextStep.next_step must match"),
        ({"hint": "  "}, "NextStep.hint must be a non-empty string"),
        ({"hint": "x" * 1001}, "the limit is 1000"),
    ],
)
def test_bad_next_steps_are_rejected(fields: dict[str, str], message: str) -> None:
    values = {"on": "success", "next_step": "run_sql", "hint": "Run it.", **fields}
    with pytest.raises(ValueError, match=message):
        NextStep(**values)  # type: ignore[arg-type]


def test_bad_next_steps_are_rejected_at_registration() -> None:
    # A rule that slipped past NextStep's own check (here: mutated) still fails registration.
    sneaky = NextStep(on="success", next_step="run_sql", hint="Run it.")
    object.__setattr__(sneaky, "on", "always")

    def fn() -> str:
        """No-op."""
        return ""

    with pytest.raises(
        ValueError, match=r"tool 'fn': NextStep\.on must be 'success' or 'error', got 'always'"
    ):
        Tool(fn, next_steps=[sneaky])
    with pytest.raises(ValueError, match=r"NextStep\.on must be 'success' or 'error'"):
        tool(next_steps=[sneaky])
    with pytest.raises(ValueError, match="more than one rule for on='success'"):
        tool(next_steps=[CHECK_OK, CHECK_OK])
    with pytest.raises(TypeError, match="must contain NextStep instances, got dict"):
        tool(next_steps=[{"on": "success", "next_step": "x", "hint": "y"}])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="next_steps must be a list of NextStep"):
        tool(next_steps=CHECK_OK)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="requires_approval must be a bool"):
        tool(requires_approval="yes")  # type: ignore[call-overload]


def test_empty_arguments_mean_an_empty_object() -> None:
    def ping() -> str:
        """Pong."""
        return "pong"

    assert Tool(ping).bind("") == {}
    assert Tool(ping).bind("{}") == {}


def test_bind_converts_to_the_declared_python_types() -> None:
    kwargs = Tool(area).bind('{"shape": "square", "size": {"width": 3.0}, "scale": 2}')
    assert kwargs == {"shape": Shape.SQUARE, "size": Size(width=3, height=1.0), "scale": 2.0}
    assert type(kwargs["scale"]) is float  # int widened for a number parameter
    assert type(kwargs["size"].width) is int  # 3.0 is a valid JSON Schema integer


def test_malformed_json_says_where() -> None:
    error = bind_error(Tool(area), '{"shape": circle}')
    assert error.kind == MALFORMED
    assert error.message.startswith("arguments are not valid JSON: Expecting value at line 1 column 11")
    assert "shape, size, scale, label" in error.message


@pytest.mark.parametrize(
    ("arguments_json", "kind"),
    [
        ("[1, 2]", "an array"),
        ('"text"', "a string"),
        ("3", "a number"),
        ("null", "null"),
        ("true", "a boolean"),
    ],
)
def test_non_object_json_is_malformed(arguments_json: str, kind: str) -> None:
    error = bind_error(Tool(area), arguments_json)
    assert error.kind == MALFORMED
    assert error.message.startswith(f"arguments must be a JSON object, got {kind}")


def test_schema_violations_list_every_problem_with_its_path() -> None:
    error = bind_error(
        Tool(area), '{"shape": "triangle", "size": {"width": "wide", "depth": 1}, "scale": "x"}'
    )
    assert error.kind == INVALID
    assert error.message.splitlines() == [
        "invalid arguments for area:",
        "- $.scale: 'x' is not of type 'number'",
        "- $.shape: 'triangle' is not one of ['circle', 'square']",
        "- $.size: unknown property 'depth'; allowed properties: width, height",
        "- $.size.width: 'wide' is not of type 'integer'",
    ]


def test_missing_properties_are_reported_by_path() -> None:
    error = bind_error(Tool(area), "{}")
    assert error.message.splitlines()[1:] == ["- $.shape: is required", "- $.size: is required"]


def test_problems_are_capped() -> None:
    def many(a: int, b: int, c: int, d: int, e: int, f: int, g: int) -> None:
        """Seven required parameters."""

    error = bind_error(Tool(many), '{"zz": 1}')
    lines = error.message.splitlines()
    assert len(lines) == 1 + 5 + 1
    assert lines[1] == "- $: unknown property 'zz'; allowed properties: a, b, c, d, e, f, g"
    assert lines[-1] == "- ... and 3 more"


def test_optional_parameter_without_default_is_filled_with_none() -> None:
    def find(query: str, near: str | None) -> None:
        """Find."""

    assert Tool(find).bind('{"query": "q"}') == {"query": "q", "near": None}
    assert Tool(find).bind('{"query": "q", "near": null}') == {"query": "q", "near": None}


def test_bool_is_not_an_integer() -> None:
    def count(n: int) -> None:
        """Count."""

    assert "True is not of type 'integer'" in bind_error(Tool(count), '{"n": true}').message


def test_the_model_cannot_set_the_context() -> None:
    registered = ToolRegistry().register(search)
    error = bind_error(registered, '{"query": "x", "ctx": {"tool_call_id": "forged"}}')
    assert error.kind == INVALID
    assert "unknown property 'ctx'; allowed properties: query, limit" in error.message


def test_long_values_are_truncated_in_messages() -> None:
    def count(n: int) -> None:
        """Count."""

    message = bind_error(Tool(count), json.dumps({"n": "x" * 5000})).message
    assert len(message) < 400
    assert message.endswith("...")


# ---- loading user modules -------------------------------------------------------------------


@pytest.fixture
def module_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        del sys.modules[name]


def write_module(directory: Path, name: str, source: str) -> None:
    (directory / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")


def test_load_module_registers_decorated_functions_in_definition_order() -> None:
    registry = ToolRegistry()
    load_modules(registry, ["tests.fixtures.custom_tools"])
    assert list(registry.names()) == ["file_note", "shout", "word_count"]
    assert [spec.name for spec in registry.specs()] == ["file_note", "shout", "word_count"]
    assert "helper" not in registry
    shout = registry.get("shout")
    assert shout is not None
    assert shout.timeout_s == 5
    assert shout.context_param == "ctx"


def test_register_function_takes_over(module_dir: Path) -> None:
    write_module(
        module_dir,
        "dynamic_tools",
        """
        from tool_svc import ToolRegistry, tool

        @tool
        def ignored() -> str:
            return "not registered: register() decides"

        def register(registry: ToolRegistry) -> None:
            for n in range(3):
                def power(x: float, n: int = n) -> float:
                    return x ** n
                registry.register(tool(name=f"power{n}")(power))
        """,
    )
    registry = ToolRegistry()
    load_modules(registry, ["dynamic_tools"])
    assert registry.names() == ("power0", "power1", "power2")


def test_tools_imported_from_elsewhere_are_not_registered_twice(module_dir: Path) -> None:
    write_module(
        module_dir,
        "reexports",
        """
        from tests.fixtures.custom_tools import word_count
        from tool_svc import tool

        @tool
        def local() -> str:
            "Name the imported tool."
            return word_count.__name__
        """,
    )
    registry = ToolRegistry()
    load_modules(registry, ["reexports"])
    assert registry.names() == ("local",)


def test_missing_module_is_named() -> None:
    with pytest.raises(ToolModuleError, match=r"cannot find tool module 'no_such_pkg\.tools'"):
        load_modules(ToolRegistry(), ["no_such_pkg.tools"])


def test_module_failing_at_import_is_named(module_dir: Path) -> None:
    write_module(module_dir, "broken_tools", "raise RuntimeError('missing API key')\n")
    with pytest.raises(
        ToolModuleError, match=r"broken_tools\.py:1: .*raised RuntimeError: missing API key while importing"
    ):
        load_modules(ToolRegistry(), ["broken_tools"])


def test_module_without_tools_is_an_error(module_dir: Path) -> None:
    write_module(module_dir, "empty_tools", "VALUE = 1\n")
    with pytest.raises(ToolModuleError, match="'empty_tools' defines no @tool functions"):
        load_modules(ToolRegistry(), ["empty_tools"])


def test_bad_tool_in_module_is_named(module_dir: Path) -> None:
    write_module(
        module_dir,
        "bad_tools",
        """
        from tool_svc import tool

        @tool
        def takes_a_set(values: set[int]) -> int:
            return len(values)
        """,
    )
    with pytest.raises(ToolModuleError, match=r"bad_tools\.py:\d+: tool 'takes_a_set': .*'values'"):
        load_modules(ToolRegistry(), ["bad_tools"])


def test_duplicate_across_modules_is_named() -> None:
    registry = ToolRegistry()
    load_modules(registry, ["tests.fixtures.custom_tools"])
    with pytest.raises(ToolModuleError, match="'word_count' is already registered"):
        load_modules(registry, ["tests.fixtures.custom_tools"])
