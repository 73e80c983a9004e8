"""Untrusted JSON Schemas: only references inside the schema are followed, and within bounds."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from agentloop.kernel.untrusted_schema import (
    MAX_REFERENCE_STEPS,
    MAX_REFERENCES,
    SchemaRefused,
    check_schema,
    compile_schema,
)
from tests.support.bait import SECRET, bait_file


@pytest.fixture(autouse=True)
def no_urlopen(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every urlopen (what jsonschema fetches remote references with) is recorded and fails the test."""
    opened: list[str] = []

    def refuse(url: Any, *args: object, **kwargs: object) -> None:
        opened.append(str(getattr(url, "full_url", url)))
        raise AssertionError(f"urlopen({url!r}) was called")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    return opened


def refusal(schema: object) -> str:
    with pytest.raises(SchemaRefused) as info:
        compile_schema(schema)
    return str(info.value)


def test_a_reference_to_a_local_file_is_refused_and_the_file_is_never_read(tmp_path: Path) -> None:
    path = bait_file(tmp_path)
    for ref in (path.as_uri(), path.name, f"./{path.name}#/description"):
        schema = {"$id": tmp_path.as_uri() + "/", "properties": {"a": {"$ref": ref}}}
        message = refusal(schema)
        assert message.startswith(f"refers outside itself: $ref {ref!r}")
        assert message.endswith("(at #/properties/a/$ref)")
        assert SECRET not in message


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "http://127.0.0.1:9/schema.json"},
        {"$ref": "https://json-schema.org/draft/2020-12/schema"},
        {"items": {"$ref": "other.json#/$defs/A"}},
        {"$defs": {"A": {"$anchor": "a"}}, "$ref": "#a"},
        {"$dynamicRef": "http://127.0.0.1:9/meta#meta"},
        {"not": {"$recursiveRef": "file:///etc/hostname"}},
        {"oneOf": [{"$ref": 5}]},
    ],
)
def test_every_reference_that_is_not_a_pointer_into_the_schema_is_refused(
    schema: dict[str, Any], no_urlopen: list[str]
) -> None:
    assert "refers outside itself" in refusal(schema) or "must be a string" in refusal(schema)
    assert no_urlopen == []


def test_an_id_below_the_root_is_refused_as_it_would_move_where_references_point() -> None:
    schema = {"properties": {"a": {"$id": "http://127.0.0.1:9/", "$ref": "#/$defs/x"}}}
    assert refusal(schema).startswith("$id is only allowed at the root")
    # Draft 4 spells it "id".
    draft4 = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "properties": {"a": {"id": "http://127.0.0.1:9/", "type": "string"}},
    }
    assert refusal(draft4).endswith("(at #/properties/a/id)")
    # A property called "id" is not an id.
    compile_schema({"properties": {"id": {"type": "string"}}})


def test_a_root_id_names_the_schema_but_local_references_stay_inside_it(no_urlopen: list[str]) -> None:
    schema = {
        "$id": "http://127.0.0.1:9/root.json",
        "type": "object",
        "properties": {"n": {"$ref": "#/$defs/N"}},
        "$defs": {"N": {"type": "integer"}},
    }
    validator = compile_schema(schema)
    assert [e.message for e in validator.errors({"n": "x"})] == ["'x' is not of type 'integer'"]
    assert validator.errors({"n": 1}) == []
    assert no_urlopen == []


def test_a_meta_schema_named_by_url_is_never_fetched(no_urlopen: list[str]) -> None:
    schema = {"$schema": "http://127.0.0.1:9/meta.json", "type": "integer"}
    assert [e.message for e in compile_schema(schema).errors("x")] == ["'x' is not of type 'integer'"]
    assert no_urlopen == []


def test_local_pointers_recursion_and_escaped_names_work() -> None:
    tree = {
        "type": "object",
        "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}, "tag": {"$ref": "#/$defs/a~1b"}},
        "$defs": {"a/b": {"type": "string"}},
    }
    validator = compile_schema(tree)
    assert validator.errors({"kids": [{"kids": [], "tag": "x"}], "tag": "y"}) == []
    assert [e.json_path for e in validator.errors({"kids": [{"tag": 1}]})] == ["$.kids[0].tag"]


def test_a_pointer_to_nothing_is_refused() -> None:
    assert refusal({"$ref": "#/$defs/missing"}) == (
        "$ref '#/$defs/missing' points to nothing in this schema (at #/$ref)"
    )
    assert "does not point to a schema" in refusal({"$defs": {"n": 3}, "$ref": "#/$defs/n"})


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#"},
        {"allOf": [{"$ref": "#"}]},
        {"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/b"}]}, "b": {"not": {"$ref": "#/$defs/a"}}}},
    ],
)
def test_a_reference_cycle_that_reads_no_input_is_refused(schema: dict[str, Any]) -> None:
    assert "would never end" in refusal(schema)


def test_the_number_of_references_and_the_nesting_are_bounded() -> None:
    many = {"properties": {f"p{i}": {"$ref": "#/$defs/A"} for i in range(MAX_REFERENCES + 1)}}
    many["$defs"] = {"A": {"type": "string"}}
    assert refusal(many) == f"holds more than {MAX_REFERENCES} references"
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(40):
        deep = {"type": "object", "properties": {"a": deep}}
    assert refusal(deep).startswith("nests more than 64 levels deep")


def test_references_that_multiply_stop_at_the_step_budget() -> None:
    defs: dict[str, Any] = {
        f"a{i}": {"allOf": [{"$ref": f"#/$defs/a{i + 1}"}, {"$ref": f"#/$defs/a{i + 1}"}]} for i in range(40)
    }
    defs["a40"] = {"type": "integer"}
    validator = compile_schema({"$defs": defs, "$ref": "#/$defs/a0"})
    with pytest.raises(SchemaRefused, match=f"more than {MAX_REFERENCE_STEPS} reference steps"):
        validator.errors(1)
    # The budget is per validation: a cheap one afterwards is unaffected.
    assert compile_schema({"$defs": {"A": {"type": "integer"}}, "$ref": "#/$defs/A"}).errors(1) == []


def test_a_value_in_enum_or_default_may_hold_anything_that_is_not_a_reference() -> None:
    schema = {"type": "object", "default": {"url": "http://127.0.0.1:9/"}, "enum": [{"a": "#"}]}
    assert check_schema(schema) is not None


def test_an_invalid_schema_names_where() -> None:
    assert refusal({"properties": {"a": {"type": 12}}}).startswith(
        "is not a valid JSON Schema: 12 is not valid"
    )
    assert refusal(["not", "an", "object"]) == "must be a JSON object or a boolean, not list"
    assert compile_schema(True).errors(json.loads('{"a": 1}')) == []


def test_a_tool_with_a_schema_that_refers_outside_itself_is_not_registered() -> None:
    from tool_svc.registry import Tool

    def fetch(**arguments: object) -> str:
        return "never"

    with pytest.raises(ValueError, match="refers outside itself") as info:
        Tool(
            fetch,
            name="fetch",
            parameters={"type": "object", "properties": {"a": {"$ref": "file:///etc/hosts"}}},
        )
    assert str(info.value).startswith("tool 'fetch': its parameters schema refers outside itself")
    tool = Tool(
        fetch,
        name="fine",
        parameters={
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/A"}},
            "$defs": {"A": {"type": "integer"}},
        },
    )
    assert tool.bind('{"a": 3}') == {"a": 3}
