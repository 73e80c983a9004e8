"""The calculator evaluates arithmetic exactly and refuses everything else."""

from __future__ import annotations

import math
import re

import pytest

from tool_svc import Tool
from tool_svc.builtins.calculator import MAX_EXPRESSION_CHARS, calculator, evaluate


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("1234 * 5678", 7006652),
        ("2 + 3 * 4", 14),
        ("(2 + 3) * 4", 20),
        ("7 / 2", 3.5),
        ("7 // 2", 3),
        ("-7 // 2", -4),
        ("7 % 3", 1),
        ("2 ** 10", 1024),
        ("2 ** -1", 0.5),
        ("-3 + +5", 2),
        ("10 / 4 * 2", 5),
        ("sqrt(16)", 4),
        ("abs(-2.5)", 2.5),
        ("round(2.567, 2)", 2.57),
        ("round(7.5)", 8),
        ("min(3, 1, 2) + max(4, 9)", 10),
        ("log(e)", 1),
        ("log(1024, 2)", 10),
        ("floor(2.7) + ceil(2.1)", 5),
        ("1_000_000 * 3", 3_000_000),
        ("12345678901234567890 * 98765432109876543210", 1219326311370217952237463801111263526900),
        ("  1 + 1  ", 2),
    ],
)
def test_results(expression: str, expected: float) -> None:
    result = evaluate(expression)
    assert result == expected
    assert type(result) is type(expected)


def test_floats_and_constants() -> None:
    assert evaluate("pi * 2") == pytest.approx(2 * math.pi)
    assert evaluate("sin(pi / 2) + cos(0)") == 2
    assert evaluate("0.1 + 0.2") == pytest.approx(0.3)


def test_the_tool_wraps_evaluate() -> None:
    assert calculator("6 * 7") == 42
    registered = Tool(calculator)
    assert registered.name == "calculator"
    assert registered.parameters["required"] == ["expression"]
    assert "arithmetic" in registered.description


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os')", "unknown function '__import__'"),
        ("__import__('os').system('id')", "attribute access is not allowed"),
        ("open('/etc/passwd')", "unknown function 'open'"),
        ("x + 1", "unknown name 'x'"),
        ("(1).real", "attribute access is not allowed"),
        ("math.sqrt(4)", "attribute access"),
        ("[1, 2][0]", "indexing is not allowed"),
        ("1 < 2", "comparison is not allowed"),
        ("lambda: 1", "Lambda is not allowed"),
        ("1 if True else 2", "IfExp is not allowed"),
        ("'a' * 3", "'a' is not a number"),
        ("True + 1", "True is not a number"),
        ("2j", "2j is not a number"),
        ("sqrt(x=4)", "positional arguments only"),
        ("1 +", "invalid expression"),
        ("", "expression is empty"),
        ("1 / 0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("sqrt(-1)", "sqrt(-1): math domain error"),
        ("(-8) ** 0.5", "not a real number"),
        ("max()", "max expected at least 1 argument"),
        ("round(1.5, 0.5)", "integer n"),
    ],
)
def test_rejections(expression: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        evaluate(expression)


@pytest.mark.parametrize(
    "expression",
    [
        "9 ** 9 ** 9",
        "2 ** 100000",
        "10 ** 400",
        "99999999 ** 9999",
        "10 ** 300 * 10 ** 300",
        "exp(1000)",
        "1e308 * 10",
    ],
)
def test_huge_results_are_refused_quickly(expression: str) -> None:
    with pytest.raises(ValueError, match=r"too large|not a finite number"):
        evaluate(expression)


def test_expression_length_is_limited() -> None:
    with pytest.raises(ValueError, match=f"the limit is {MAX_EXPRESSION_CHARS}"):
        evaluate("1+" * MAX_EXPRESSION_CHARS + "1")


def test_deep_nesting_within_the_length_limit() -> None:
    assert evaluate("-" * 400 + "1") == 1
    assert evaluate("(" * 150 + "1" + ")" * 150) == 1
    with pytest.raises(ValueError, match="invalid expression: too many nested parentheses"):
        evaluate("(" * 240 + "1" + ")" * 240)
