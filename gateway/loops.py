"""Loop detection: has the model started repeating the same tool rounds?

A *round* is one agent step's tool calls with their results. Two rounds are
*alike* when they call the same tools (as a multiset) and, call by call, the
arguments are at least `args_similarity` alike and the results at least
`result_similarity` alike. Similarity is difflib's ratio over canonical JSON
(keys sorted) for arguments and over the text for results, both cut to
`_MAX_CHARS`, so it is cheap and insensitive to key order or small noise
(a timestamp, a counter).

A loop of period p is found when each of the last p rounds is alike the round
p positions earlier: p = 1 is the same call twice in a row (seed 000), p = 2
catches A, B, A, B. Periods up to `max_period` are checked, shortest first.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from agentloop.v1 import agent_pb2, common_pb2

DEFAULT_SIMILARITY = 0.9
DEFAULT_MAX_PERIOD = 2
MAX_PERIOD_LIMIT = 5
_MAX_CHARS = 2000


@dataclass(frozen=True)
class LoopSettings:
    """Resolved loop-detection options of a run."""

    enabled: bool = True
    args_similarity: float = DEFAULT_SIMILARITY
    result_similarity: float = DEFAULT_SIMILARITY
    max_period: int = DEFAULT_MAX_PERIOD

    @classmethod
    def from_proto(cls, options: agent_pb2.LoopDetection) -> LoopSettings:
        return cls(
            enabled=not options.disabled,
            args_similarity=options.args_similarity or DEFAULT_SIMILARITY,
            result_similarity=options.result_similarity or DEFAULT_SIMILARITY,
            max_period=options.max_period or DEFAULT_MAX_PERIOD,
        )


@dataclass(frozen=True)
class Call:
    """One call of a round: what was asked and what came back."""

    name: str
    args: str
    result: str


Round = tuple[Call, ...]


def canonical_args(arguments_json: str) -> str:
    """Arguments as canonical JSON (sorted keys), or the raw text when it is not JSON."""
    try:
        return json.dumps(json.loads(arguments_json or "{}"), sort_keys=True, ensure_ascii=False)[:_MAX_CHARS]
    except ValueError:
        return arguments_json[:_MAX_CHARS]


def similarity(a: str, b: str) -> float:
    """difflib ratio in [0, 1]; equal strings short-circuit."""
    if a == b:
        return 1.0
    matcher = SequenceMatcher(None, a[:_MAX_CHARS], b[:_MAX_CHARS], autojunk=False)
    if matcher.real_quick_ratio() == 0 or matcher.quick_ratio() == 0:
        return 0.0
    return matcher.ratio()


def rounds_of(messages: Sequence[common_pb2.Message]) -> list[Round]:
    """The tool rounds of a conversation slice, in order (an assistant message with calls + its results)."""
    results = {m.tool_call_id: m.content for m in messages if m.role == common_pb2.ROLE_TOOL}
    out: list[Round] = []
    for msg in messages:
        if msg.role == common_pb2.ROLE_ASSISTANT and msg.tool_calls:
            out.append(
                tuple(
                    sorted(
                        (
                            Call(c.name, canonical_args(c.arguments_json), results.get(c.id, ""))
                            for c in msg.tool_calls
                        ),
                        key=lambda call: (call.name, call.args),
                    )
                )
            )
    return out


def rounds_alike(a: Round, b: Round, settings: LoopSettings) -> bool:
    """Same tools, similar arguments and similar results, call by call."""
    if len(a) != len(b) or [c.name for c in a] != [c.name for c in b]:
        return False
    return all(
        similarity(x.args, y.args) >= settings.args_similarity
        and similarity(x.result, y.result) >= settings.result_similarity
        for x, y in zip(a, b, strict=True)
    )


def detect_loop(rounds: Sequence[Round], settings: LoopSettings) -> int:
    """The shortest period p <= max_period whose last p rounds repeat the p before them; 0 if none."""
    if not settings.enabled:
        return 0
    for period in range(1, min(settings.max_period, MAX_PERIOD_LIMIT) + 1):
        if len(rounds) < 2 * period:
            break
        if all(rounds_alike(rounds[-i], rounds[-i - period], settings) for i in range(1, period + 1)):
            return period
    return 0


def describe(rounds: Sequence[Round], period: int) -> str:
    """A sentence naming the repeated calls, for the final reply and the decision event."""
    names = " → ".join(", ".join(c.name for c in r) for r in rounds[-period:])
    times = "twice in a row" if period == 1 else f"in a cycle of {period} rounds ({names}), twice"
    return f"the same tool calls repeated {times} with the same results: {names}"
