"""A calculator the model can trust with arithmetic it would otherwise get wrong.

The expression is parsed with ``ast`` and walked node by node against an
allow-list, so nothing is ever evaluated as Python. Size limits on the input,
on exponents and on every intermediate result keep a hostile expression from
pinning a CPU or exhausting memory.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from types import MappingProxyType

from tool_svc.registry import tool

Number = int | float

MAX_EXPRESSION_CHARS = 500
MAX_INT_BITS = 1024
"""Integers beyond about 10**308 are refused; that is also where floats overflow."""
MAX_EXPONENT = 10_000

_BINARY: Mapping[type[ast.operator], Callable[[Number, Number], Number]] = MappingProxyType(
    {
        ast.Add: operator.add,
        ast.Sub: operator.sub,
        ast.Mult: operator.mul,
        ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv,
        ast.Mod: operator.mod,
        ast.Pow: operator.pow,
    }
)
_UNARY: Mapping[type[ast.unaryop], Callable[[Number], Number]] = MappingProxyType(
    {ast.UAdd: operator.pos, ast.USub: operator.neg}
)
_CONSTANTS: Mapping[str, float] = MappingProxyType({"pi": math.pi, "e": math.e})


def _round(value: Number, digits: Number = 0) -> Number:
    if not isinstance(digits, int) or abs(digits) > 100:
        raise ValueError("round(x, n) needs an integer n between -100 and 100")
    return round(value, digits)


def _log(value: Number, base: Number | None = None) -> float:
    return math.log(value) if base is None else math.log(value, base)


_FUNCTIONS: Mapping[str, Callable[..., Number]] = MappingProxyType(
    {
        "sqrt": math.sqrt,
        "abs": abs,
        "round": _round,
        "min": min,
        "max": max,
        "log": _log,
        "exp": math.exp,
        "sin": math.sin,
        "cos": math.cos,
        "tan": math.tan,
        "floor": math.floor,
        "ceil": math.ceil,
    }
)
_ALLOWED_NAMES = ", ".join([*_FUNCTIONS, *_CONSTANTS])


@tool
def calculator(expression: str) -> Number:
    """Evaluate an arithmetic expression exactly; use it instead of doing arithmetic yourself.

    Supports numbers, + - * / // % ** (power), parentheses and the functions
    sqrt, abs, round, min, max, log (natural, or log(x, base)), exp, sin, cos,
    tan (radians), floor, ceil, and the constants pi and e.

    Args:
        expression: The expression, for example "1234 * 5678" or "sqrt(2) * (3 + 4) / 7".
    """
    return evaluate(expression)


def evaluate(expression: str) -> Number:
    """The value of ``expression``; integral results come back as ints. Raises ValueError."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ValueError(
            f"expression is {len(expression)} characters long; the limit is {MAX_EXPRESSION_CHARS}"
        )
    if not expression.strip():
        raise ValueError("expression is empty")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"invalid expression: {exc.msg} at column {exc.offset}") from None
    try:
        value = _eval(tree.body)
    except ZeroDivisionError:
        raise ValueError("division by zero") from None
    except OverflowError:
        raise ValueError("the result is too large") from None
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def _eval(node: ast.expr) -> Number:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise ValueError(f"{node.value!r} is not a number")
        return _checked(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        return _checked(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.Name):
        if node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        raise ValueError(f"unknown name {node.id!r}; allowed: {_ALLOWED_NAMES}")
    if isinstance(node, ast.Call):
        return _call(node)
    raise ValueError(
        f"{_describe(node)} is not allowed; use numbers, + - * / // % **, parentheses and functions"
    )


def _call(node: ast.Call) -> Number:
    if not isinstance(node.func, ast.Name):
        raise ValueError(f"{_describe(node.func)} is not allowed; call functions by name")
    if node.func.id not in _FUNCTIONS:
        raise ValueError(f"unknown function {node.func.id!r}; allowed: {', '.join(_FUNCTIONS)}")
    if node.keywords:
        raise ValueError(f"{node.func.id}() takes positional arguments only")
    args = [_eval(arg) for arg in node.args]
    try:
        return _checked(_FUNCTIONS[node.func.id](*args))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{node.func.id}({', '.join(map(str, args))}): {exc}") from None


def _check_power(base: Number, exponent: Number) -> None:
    if abs(exponent) > MAX_EXPONENT:
        raise ValueError(f"exponent {exponent} is too large (at most {MAX_EXPONENT})")
    # Refuse before computing: building a huge int is itself the attack.
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0:
        result_bits = (abs(base).bit_length() - 1) * exponent
        if result_bits > MAX_INT_BITS:
            raise ValueError("the result is too large")


def _checked(value: Number) -> Number:
    if isinstance(value, complex):  # e.g. (-8) ** 0.5
        raise ValueError("the result is not a real number")
    if isinstance(value, int):
        if value.bit_length() > MAX_INT_BITS:
            raise ValueError("the result is too large")
    elif not math.isfinite(value):
        raise ValueError("the result is not a finite number")
    return value


def _describe(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return "attribute access"
    if isinstance(node, ast.Compare):
        return "comparison"
    if isinstance(node, ast.Subscript):
        return "indexing"
    return type(node).__name__
