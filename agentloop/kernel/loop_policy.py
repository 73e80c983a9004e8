"""What loop detection must be told about a tool, shared by the tool registry, settings and gateway.

Loop detection's defaults (every argument counts, results must be identical,
an unchanged repeat is a loop) are right for most tools. Some tools need more:
a poll tool repeats the same call on purpose while a job runs, an argument may
be a free-text reason that changes nothing, a result may carry a timestamp.
A LoopPolicy says so. Tools declare it with ``@tool(loop_policy=...)``; it
travels to the gateway in ``ToolSpec.loop_policy``; an operator can set or
replace it per tool with ``AGENTLOOP_LOOP_POLICIES`` (tools without a Python
decorator, MCP tools). The rules are in docs/loop-detection.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from agentloop.v1 import common_pb2

MAX_REPEAT_BUDGET = 100
MAX_PATHS = 32
MAX_PATH_CHARS = 200
MAX_POLICIES_CHARS = 64 * 1024
_SEGMENT = re.compile(r"^[^.\s]{1,64}$")
_FIELDS = frozenset({"ignore_args", "volatile_result_fields", "repeat_budget"})


@dataclass(frozen=True, slots=True)
class LoopPolicy:
    """One tool's loop-detection declaration (see ``common_pb2.LoopPolicy`` for the fields' meaning).

    Paths are dotted keys into a JSON object ("reason", "meta.request_id");
    a "*" segment matches any key or array index.
    """

    ignore_args: tuple[str, ...] = ()
    volatile_result_fields: tuple[str, ...] = ()
    repeat_budget: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "ignore_args", _check_paths(self.ignore_args, "ignore_args"))
        object.__setattr__(
            self,
            "volatile_result_fields",
            _check_paths(self.volatile_result_fields, "volatile_result_fields"),
        )
        budget = self.repeat_budget
        if isinstance(budget, bool) or not isinstance(budget, int) or not 0 <= budget <= MAX_REPEAT_BUDGET:
            raise ValueError(
                f"repeat_budget must be an integer from 0 to {MAX_REPEAT_BUDGET}, got {budget!r}"
            )

    def to_proto(self) -> common_pb2.LoopPolicy:
        """The policy as published in ToolSpec.loop_policy."""
        return common_pb2.LoopPolicy(
            ignore_args=self.ignore_args,
            volatile_result_fields=self.volatile_result_fields,
            repeat_budget=self.repeat_budget,
        )

    @classmethod
    def from_proto(cls, message: common_pb2.LoopPolicy) -> LoopPolicy:
        """The policy a ToolService published; what does not pass the checks is dropped, not fatal.

        A ToolService is another process: a bad path from it must not fail runs,
        so unusable paths are skipped and the budget is clamped to its range.
        """
        return cls(
            ignore_args=_usable(message.ignore_args),
            volatile_result_fields=_usable(message.volatile_result_fields),
            repeat_budget=max(0, min(MAX_REPEAT_BUDGET, message.repeat_budget)),
        )


def policy_of_spec(spec: common_pb2.ToolSpec) -> LoopPolicy:
    """The policy a tool spec declares, or the defaults."""
    return LoopPolicy.from_proto(spec.loop_policy) if spec.HasField("loop_policy") else LoopPolicy()


def parse_policies(text: str, source: str) -> tuple[tuple[str, LoopPolicy], ...]:
    """Policies by tool name from JSON text: ``{"tool": {"repeat_budget": 5, ...}, ...}``.

    ``source`` names where the text came from (an environment variable) and
    starts every error message. The text is size-checked before it is parsed.
    """
    if not text.strip():
        return ()
    if len(text) > MAX_POLICIES_CHARS:
        raise ValueError(f"{source}: longer than {MAX_POLICIES_CHARS} characters")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{source}: not valid JSON ({str(exc)[:200]})") from None
    if not isinstance(data, dict):
        raise ValueError(f'{source}: expected a JSON object {{"tool name": {{...}}}}')
    return tuple((str(name), _policy_from_json(body, f"{source}.{name}")) for name, body in data.items())


def _policy_from_json(body: Any, where: str) -> LoopPolicy:
    if not isinstance(body, dict):
        raise ValueError(f"{where}: expected an object with {', '.join(sorted(_FIELDS))}")
    unknown = sorted(set(body) - _FIELDS)
    if unknown:
        raise ValueError(f"{where}.{unknown[0]}: unknown field (allowed: {', '.join(sorted(_FIELDS))})")
    try:
        return LoopPolicy(
            ignore_args=_string_list(body.get("ignore_args", []), f"{where}.ignore_args"),
            volatile_result_fields=_string_list(
                body.get("volatile_result_fields", []), f"{where}.volatile_result_fields"
            ),
            repeat_budget=body.get("repeat_budget", 0),
        )
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def _string_list(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"{where}: expected a list of strings")
    return tuple(value)


def _check_paths(paths: Iterable[str], name: str) -> tuple[str, ...]:
    if isinstance(paths, str):
        raise TypeError(f"{name} must be a list of paths, got a string")
    checked = tuple(paths)
    if len(checked) > MAX_PATHS:
        raise ValueError(f"{name} has {len(checked)} paths; the limit is {MAX_PATHS}")
    for path in checked:
        if not _path_ok(path):
            raise ValueError(
                f"{name}: {path!r} is not a dotted path of keys (e.g. 'meta.request_id', 'items.*.ts')"
            )
    return checked


def _path_ok(path: object) -> bool:
    return (
        isinstance(path, str)
        and 0 < len(path) <= MAX_PATH_CHARS
        and all(_SEGMENT.fullmatch(part) for part in path.split("."))
    )


def _usable(paths: Iterable[str]) -> tuple[str, ...]:
    return tuple(path for path in paths if _path_ok(path))[:MAX_PATHS]
