"""The shared bounded JSON parser: depth and size are refused before the parser can recurse."""

from __future__ import annotations

import json

import pytest

from agentloop.kernel.jsonlimits import JsonTooDeep, JsonTooLarge, json_depth, loads_bounded


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_depth_ignores_brackets_inside_strings() -> None:
    assert json_depth('{"a": "[[[[{{{{", "b": [1, {"c": "]]]\\"[["}]}') == 3
    assert json_depth('"just a string"') == 0
    assert json_depth("42") == 0


def test_deep_text_under_the_size_limit_is_refused_before_parsing() -> None:
    text = nested(2000)
    assert len(text) < 64 * 1024
    with pytest.raises(RecursionError):
        json.loads(nested(100_000))  # what the bound protects against
    with pytest.raises(JsonTooDeep) as info:
        loads_bounded(text, what="arguments_json")
    assert str(info.value).startswith("arguments_json: nests more than 64 levels deep")
    assert isinstance(info.value, ValueError)


def test_unterminated_deep_text_is_refused_too() -> None:
    with pytest.raises(JsonTooDeep):
        loads_bounded('{"a": ' + "[" * 500, what="x")


def test_size_limit_counts_utf8_bytes() -> None:
    with pytest.raises(JsonTooLarge) as info:
        loads_bounded(json.dumps("é" * 600, ensure_ascii=False), max_bytes=1000, what="schema")
    assert str(info.value) == "schema: is 1202 bytes; at most 1000 are allowed"


def test_values_within_limits_parse_as_json_does() -> None:
    text = json.dumps({"a": [1, 2, {"b": "[{"}], "c": None})
    assert loads_bounded(text, what="x") == json.loads(text)
    assert loads_bounded(nested(64), what="x") == json.loads(nested(64))
    assert loads_bounded(b'{"k": 1}', what="x") == {"k": 1}
    with pytest.raises(json.JSONDecodeError):
        loads_bounded("{", what="x")
