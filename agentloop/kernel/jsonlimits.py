"""Bounded JSON parsing for every JSON text that arrives from outside a service.

`json.loads` recurses once per nesting level, so a few kilobytes of ``[[[[…``
raise RecursionError deep inside a handler (or, worse, in code that re-parses
an already accepted value later). Every service parses untrusted JSON through
`loads_bounded`, which checks size and nesting depth with a cheap linear scan
before the parser runs, and raises a typed error (a ValueError, so code that
already handles malformed JSON handles these too) whose message names what
was being parsed.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

MAX_DEPTH = 64
"""Default nesting limit: far above any real tool arguments, schema or context, far below recursion limits."""

MAX_BYTES = 1024 * 1024
"""Default size limit of one JSON text, in UTF-8 bytes."""

STRUCT_MAX_DEPTH = 30
"""Nesting limit of JSON that travels as a google.protobuf.Struct (a structured answer in RunFinal).

Each JSON level is two or three protobuf messages (Struct, map entry, Value),
and protobuf decodes at most 100 levels of messages: JSON much deeper than
30 levels makes a message no client can decode (see agentloop.kernel.request_checks).
"""

# A JSON string literal, unrolled so long strings cost no backtracking.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class JsonLimitError(ValueError):
    """A JSON text exceeds a size or depth limit; the message starts with what was parsed."""

    def __init__(self, what: str, problem: str) -> None:
        super().__init__(f"{what}: {problem}")
        self.what = what
        self.problem = problem


class JsonTooLarge(JsonLimitError):
    """The text is larger than the allowed number of bytes."""


class JsonTooDeep(JsonLimitError):
    """Arrays and objects nest deeper than allowed."""


def json_depth(text: str) -> int:
    """The deepest nesting of arrays/objects in ``text``, ignoring brackets inside strings.

    Exact for valid JSON; for invalid JSON it is at least the depth a parser
    would reach before finding the error, so it is a safe bound either way.
    """
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(_STEP[c] for c in brackets), default=0)


def _utf8_size(text: str, max_bytes: int) -> int:
    """UTF-8 size of ``text``, without encoding it when it cannot exceed ``max_bytes`` anyway."""
    return len(text) if len(text) * 4 <= max_bytes else len(text.encode())


def check_bounds(
    text: str | bytes, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH, what: str
) -> str:
    """Return ``text`` as str after checking its size and depth; raise JsonLimitError otherwise."""
    size = len(text) if isinstance(text, bytes) else _utf8_size(text, max_bytes)
    if size > max_bytes:
        raise JsonTooLarge(what, f"is {size} bytes; at most {max_bytes} are allowed")
    decoded = text.decode("utf-8", errors="replace") if isinstance(text, bytes) else text
    depth = json_depth(decoded)
    if depth > max_depth:
        raise JsonTooDeep(what, f"nests more than {max_depth} levels deep (found {depth})")
    return decoded


def loads_bounded(
    text: str | bytes, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH, what: str = "JSON"
) -> Any:
    """`json.loads` after the size and depth checks of `check_bounds`.

    Raises JsonLimitError for a text over the limits and json.JSONDecodeError
    (also a ValueError) for one that is not JSON.
    """
    return json.loads(check_bounds(text, max_bytes=max_bytes, max_depth=max_depth, what=what))


def json_kind(value: Any) -> str:
    """A decoded JSON value's type as an error message names it ("an array", "null")."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    return "null" if value is None else "a number"
