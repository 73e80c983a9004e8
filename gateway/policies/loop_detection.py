"""Loop detection: has the model started repeating tool rounds that teach it nothing new?

A *round* is one agent step's tool calls with their results. Two rounds are
*the same* when they make the same calls (as a multiset) and every call got
the same outcome. Sameness is judged by meaning, not by characters:

- arguments are compared as parsed JSON in a canonical form (keys sorted,
  whitespace inside strings collapsed, 1.0 == 1); any other leaf value makes
  a different call, unless the tool declares that field irrelevant
  (``LoopPolicy.ignore_args``);
- results must be identical, after the same canonical form for JSON results
  and after removing the fields the tool declares volatile
  (``LoopPolicy.volatile_result_fields``: timestamps, request ids). An error
  result is compared like any other, so a different error is progress.

A loop of period p is found when the last rounds repeat the p rounds before
them: p = 1 is the same round twice in a row, p = 2 catches A, B, A, B.
A tool may declare that unchanged repeats are expected (``repeat_budget``:
a poll tool waiting for a job); a cycle made of such calls is a loop only
after more repeats than the largest budget among them. Anything new - a new
result, a different tool, a different error - breaks the repetition, so
suspicion starts again from zero.

JSON is parsed only when it is small and shallow enough (``_loads_bounded``);
anything else is compared as text, so a hostile argument cannot make the
check fail or slow.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentloop.kernel.jsonlimits import loads_bounded
from agentloop.kernel.loop_policy import LoopPolicy, policy_of_spec
from agentloop.v1 import agent_pb2, common_pb2

DEFAULT_MAX_PERIOD = 3
MAX_PERIOD_LIMIT = 5
_MAX_DEPTH = 64
_MAX_PARSE_CHARS = 256 * 1024
_ERROR_PREFIX = "ERROR ("


@dataclass(frozen=True)
class LoopSettings:
    """Resolved loop-detection options of a run, plus the gateway's per-tool policies."""

    enabled: bool = True
    max_period: int = DEFAULT_MAX_PERIOD
    overrides: tuple[tuple[str, LoopPolicy], ...] = ()
    """Policies from AGENTLOOP_LOOP_POLICIES; each replaces what the tool's spec declares."""

    @classmethod
    def from_proto(
        cls, options: agent_pb2.LoopDetection, overrides: tuple[tuple[str, LoopPolicy], ...] = ()
    ) -> LoopSettings:
        """The run's options (the deprecated similarity fields are ignored)."""
        return cls(
            enabled=not options.disabled,
            max_period=options.max_period or DEFAULT_MAX_PERIOD,
            overrides=overrides,
        )


@dataclass(frozen=True)
class Call:
    """One call of a round as the model saw it: tool name, arguments text, result text."""

    name: str
    args: str
    result: str


Round = tuple[Call, ...]
_CallKey = tuple[str, str, str]
_RoundKey = tuple[_CallKey, ...]


@dataclass(frozen=True)
class Loop:
    """A repetition found: which rounds repeat which, and what the tools declared."""

    period: int
    first_round: int
    """1-based round (of this run) where the repeated pattern first started."""
    last_round: int
    """The round just finished, where the loop was noticed."""
    tools: tuple[tuple[str, ...], ...]
    """Tool names of each round of the pattern."""
    errors: bool
    """Every outcome in the pattern was an error result."""
    budget: int
    """Unchanged repeats the tools declared as expected (largest budget in the pattern)."""
    ignored: tuple[str, ...] = ()
    """Declared argument and result fields that were left out of the comparison."""

    @property
    def repeats(self) -> int:
        """How many times the pattern came back after its first occurrence."""
        return (self.last_round - self.first_round + 1) // self.period - 1


def rounds_of(messages: Sequence[common_pb2.Message]) -> list[Round]:
    """The tool rounds of a conversation slice, in order (an assistant message with calls + its results)."""
    results = {m.tool_call_id: m.content for m in messages if m.role == common_pb2.ROLE_TOOL}
    return [
        tuple(Call(c.name, c.arguments_json, results.get(c.id, "")) for c in msg.tool_calls)
        for msg in messages
        if msg.role == common_pb2.ROLE_ASSISTANT and msg.tool_calls
    ]


def detect_loop(
    rounds: Sequence[Round], settings: LoopSettings, specs: Mapping[str, common_pb2.ToolSpec] | None = None
) -> Loop | None:
    """The shortest repetition of the last rounds that went past its budget, or None."""
    if not settings.enabled:
        return None
    policy = _policies(settings, specs or {})
    keys = _KeyCache(rounds, policy)
    count = len(rounds)
    for period in range(1, min(settings.max_period, MAX_PERIOD_LIMIT) + 1):
        if count < 2 * period:
            break
        pattern = rounds[count - period :]
        budget = max(policy(call.name).repeat_budget for rnd in pattern for call in rnd)
        needed = period * (budget + 1)  # rounds that must each equal the round `period` earlier
        if count - period < needed:
            continue
        if all(keys.get(count - 1 - i) == keys.get(count - 1 - i - period) for i in range(needed)):
            first = count - period - needed + 1
            return Loop(
                period=period,
                first_round=first,
                last_round=count,
                tools=tuple(tuple(sorted(call.name for call in rnd)) for rnd in pattern),
                errors=all(call.result.startswith(_ERROR_PREFIX) for rnd in pattern for call in rnd),
                budget=budget,
                ignored=_declared(policy, pattern),
            )
    return None


def describe(loop: Loop) -> str:
    """A sentence saying which rounds matched and why, for the final reply and the decision event."""
    names = " → ".join(", ".join(tools) for tools in loop.tools)
    times = "twice" if loop.repeats == 1 else f"{loop.repeats + 1} times"
    if loop.period == 1:
        what = f"repeated {times} in a row"
    else:
        what = f"repeated in a cycle of {loop.period} rounds ({names}), {times}"
    repeated = _span(loop.first_round + loop.period, loop.last_round)
    original = _span(loop.first_round, loop.first_round + loop.period - 1)
    outcome = "error" if loop.errors else "result"
    plural = "s" if sum(len(tools) for tools in loop.tools) > 1 else ""
    calls = ", ".join(dict.fromkeys(name for tools in loop.tools for name in tools))
    why = f"{calls}: same arguments, same {outcome}{plural}"
    if loop.ignored:
        why += f", ignoring declared fields {', '.join(loop.ignored)}"
    if loop.budget:
        why += f"; at most {loop.budget} repeats are expected"
    verb = "repeats" if loop.last_round == loop.first_round + loop.period else "repeat"
    return f"the same tool calls {what} with the same results: {repeated} {verb} {original} ({why})"


def _span(first: int, last: int) -> str:
    return f"round {first}" if first == last else f"rounds {first}–{last}"


def _policies(
    settings: LoopSettings, specs: Mapping[str, common_pb2.ToolSpec]
) -> Callable[[str], LoopPolicy]:
    """Policy lookup for this check: the gateway's override, else the spec's declaration, else defaults."""
    overrides = dict(settings.overrides)
    cache: dict[str, LoopPolicy] = {}

    def policy(name: str) -> LoopPolicy:
        if name not in cache:
            spec = specs.get(name)
            default = policy_of_spec(spec) if spec is not None else LoopPolicy()
            cache[name] = overrides.get(name, default)
        return cache[name]

    return policy


def _declared(policy: Callable[[str], LoopPolicy], pattern: Sequence[Round]) -> tuple[str, ...]:
    fields: dict[str, None] = {}
    for rnd in pattern:
        for call in rnd:
            declared = policy(call.name)
            fields.update(dict.fromkeys(declared.ignore_args))
            fields.update(dict.fromkeys(declared.volatile_result_fields))
    return tuple(fields)


class _KeyCache:
    """Canonical keys of rounds, computed only for the rounds a check looks at, once each."""

    def __init__(self, rounds: Sequence[Round], policy: Callable[[str], LoopPolicy]) -> None:
        self._rounds = rounds
        self._policy = policy
        self._keys: dict[int, _RoundKey] = {}

    def get(self, index: int) -> _RoundKey:
        key = self._keys.get(index)
        if key is None:
            key = tuple(sorted(self._call_key(call) for call in self._rounds[index]))
            self._keys[index] = key
        return key

    def _call_key(self, call: Call) -> _CallKey:
        declared = self._policy(call.name)
        return (
            call.name,
            canonical(call.args or "{}", declared.ignore_args),
            canonical(call.result, declared.volatile_result_fields),
        )


def canonical(text: str, drop: Sequence[str] = ()) -> str:
    """JSON text in canonical form without the `drop` paths; other text with its whitespace collapsed.

    Canonical form: keys sorted, insignificant whitespace gone, whitespace
    runs inside strings collapsed to one space and trimmed, integral floats
    written as integers. Text too large or too deep to parse safely is
    compared exactly as it is.
    """
    parsed, value = _loads_bounded(text)
    if not parsed:
        return " ".join(text.split()) if len(text) <= _MAX_PARSE_CHARS else text
    paths = [path.split(".") for path in drop]
    return json.dumps(_normalise(value, paths), sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _loads_bounded(text: str) -> tuple[bool, Any]:
    """(True, value) for JSON within the shared size and depth bounds; (False, None) for anything else."""
    if not text.strip():
        return False, None
    try:
        return True, loads_bounded(text, max_bytes=_MAX_PARSE_CHARS, max_depth=_MAX_DEPTH, what="tool JSON")
    except (ValueError, RecursionError):
        return False, None


def _normalise(value: Any, drop: list[list[str]]) -> Any:
    """`value` in canonical form, without the paths in `drop` (each a list of keys, "*" = any)."""
    if isinstance(value, dict):
        return {
            key: _normalise(item, _below(drop, key))
            for key, item in value.items()
            if not any(len(path) == 1 and path[0] in (key, "*") for path in drop)
        }
    if isinstance(value, list):
        return [
            _normalise(item, _below(drop, str(i)))
            for i, item in enumerate(value)
            if not any(len(path) == 1 and path[0] in (str(i), "*") for path in drop)
        ]
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


def _below(drop: list[list[str]], key: str) -> list[list[str]]:
    return [path[1:] for path in drop if len(path) > 1 and path[0] in (key, "*")]
