"""Loop detection against a labelled corpus: precision, recall and how long each loop ran.

The corpus (bench/loop_corpus.json) holds tool-call traces labelled "progress"
(pagination, per-id lookups, polling, retries with corrected arguments, ...)
or "loop" (identical repeats, A-B cycles, reformatted arguments, errors
retried unchanged, polls past their budget). Each trace is fed to the
gateway's detector round by round, exactly as a run would be: the rounds are
turned into conversation messages, read back with ``rounds_of`` and checked
with the tools' declared LoopPolicy carried in ToolSpecs.

Targets: no progress trace is ever stopped, and every loop is stopped within
two repeats of its pattern beyond what its tools declare as expected. The
unit test tests/unit/test_loops.py asserts them; this module reports
the figures and writes bench/results/loop_detection.json.

Run: ``python -m bench.loop_detection``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentloop.kernel.loop_policy import LoopPolicy, parse_policies
from agentloop.v1 import common_pb2
from bench.workload import publish
from gateway.policies.loop_detection import LoopSettings, describe, detect_loop, rounds_of

CORPUS = Path(__file__).with_name("loop_corpus.json")
OUT = Path(__file__).parent / "results" / "loop_detection.json"
ALLOWED_REPEATS = 2
"""A loop must be stopped within this many repeats of its pattern past the declared budget."""


@dataclass(frozen=True)
class Trace:
    """One labelled trace of the corpus."""

    name: str
    label: str
    rounds: list[list[dict[str, Any]]]
    policies: dict[str, LoopPolicy]
    loop_start: int = 0
    period: int = 0


@dataclass(frozen=True)
class Outcome:
    """What the detector did with one trace."""

    trace: Trace
    stopped_at: int | None
    """1-based round after which the detector stopped the run, or None."""
    detail: str = ""

    @property
    def budget(self) -> int:
        """The largest repeat budget the loop's tools declared."""
        if not self.trace.period:
            return 0
        start = self.trace.loop_start - 1
        pattern = self.trace.rounds[start : start + self.trace.period]
        return max(self.trace.policies.get(c["tool"], LoopPolicy()).repeat_budget for r in pattern for c in r)

    @property
    def rounds_in_loop(self) -> int:
        """Rounds the loop ran, from the first round of its pattern to the stop (0 if never stopped)."""
        return 0 if self.stopped_at is None else self.stopped_at - self.trace.loop_start + 1

    @property
    def repeats(self) -> float:
        """Repeats of the pattern past its first occurrence and past the declared budget, when stopped."""
        return self.rounds_in_loop / self.trace.period - 1 - self.budget if self.trace.period else 0.0

    @property
    def correct(self) -> bool:
        """Progress never stopped; a loop stopped after one full repeat and within the allowed repeats."""
        if self.trace.label == "progress":
            return self.stopped_at is None
        return (
            self.stopped_at is not None
            and self.repeats + self.budget >= 1
            and self.repeats <= ALLOWED_REPEATS
        )


def load_corpus(path: Path = CORPUS) -> list[Trace]:
    """The corpus's traces, with each tool's declared policy parsed like AGENTLOOP_LOOP_POLICIES."""
    data = json.loads(path.read_text())
    traces = []
    for item in data["traces"]:
        loop = item.get("loop", {})
        policies = dict(parse_policies(json.dumps(item.get("tools", {})), f"{item['name']}.tools"))
        traces.append(
            Trace(
                name=item["name"],
                label=item["label"],
                rounds=item["rounds"],
                policies=policies,
                loop_start=loop.get("start", 0),
                period=loop.get("period", 0),
            )
        )
    return traces


def run_trace(trace: Trace, settings: LoopSettings | None = None) -> Outcome:
    """Feed the trace round by round through the gateway's detector; stop where it would stop the run."""
    settings = settings or LoopSettings()
    specs = {
        name: common_pb2.ToolSpec(name=name, loop_policy=p.to_proto()) for name, p in trace.policies.items()
    }
    messages = [common_pb2.Message(role=common_pb2.ROLE_USER, content=trace.name)]
    for number, calls in enumerate(trace.rounds, start=1):
        messages.extend(_round_messages(number, calls))
        loop = detect_loop(rounds_of(messages), settings, specs)
        if loop is not None:
            return Outcome(trace, number, describe(loop))
    return Outcome(trace, None)


def _round_messages(number: int, calls: list[dict[str, Any]]) -> list[common_pb2.Message]:
    """One round as the gateway records it: the assistant's calls, then one tool message per result."""
    tool_calls = [
        common_pb2.ToolCall(id=f"r{number}c{i}", name=call["tool"], arguments_json=_text(call["args"]))
        for i, call in enumerate(calls)
    ]
    out = [common_pb2.Message(role=common_pb2.ROLE_ASSISTANT, tool_calls=tool_calls)]
    for tool_call, call in zip(tool_calls, calls, strict=True):
        content = _text(call["result"])
        if call.get("error"):
            content = f"ERROR ({call['error']}): {content}"
        out.append(common_pb2.Message(role=common_pb2.ROLE_TOOL, tool_call_id=tool_call.id, content=content))
    return out


def _text(value: Any) -> str:
    """A string as written (it may be deliberately odd JSON); anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def summarize(outcomes: list[Outcome]) -> dict[str, Any]:
    """Precision, recall and the rounds each loop ran, as the report stores them."""
    progress = [o for o in outcomes if o.trace.label == "progress"]
    loops = [o for o in outcomes if o.trace.label == "loop"]
    false_positives = [o.trace.name for o in _stopped(progress)]
    caught = _stopped(loops)
    stopped = len(false_positives) + len(caught)
    return {
        "progress_traces": len(progress),
        "loop_traces": len(loops),
        "false_positives": false_positives,
        "loops_missed": [o.trace.name for o in loops if o.stopped_at is None],
        "loops_too_late_or_early": [o.trace.name for o in caught if not o.correct],
        "precision": _share(len(caught), stopped),
        "recall": _share(len(caught), len(loops)),
        "max_repeats_past_budget": max((o.repeats for o in caught), default=0.0),
        "loops": [_loop_row(o) for o in loops],
    }


def _stopped(outcomes: list[Outcome]) -> list[Outcome]:
    return [o for o in outcomes if o.stopped_at is not None]


def _share(part: int, whole: int) -> float:
    """part / whole; 1.0 for none of none, as no stop (or no loop) means nothing went wrong."""
    return part / whole if whole else 1.0


def _loop_row(o: Outcome) -> dict[str, Any]:
    """One loop trace's outcome, a row of the report's table."""
    return {
        "name": o.trace.name,
        "period": o.trace.period,
        "budget": o.budget,
        "pattern_starts_at_round": o.trace.loop_start,
        "stopped_after_round": o.stopped_at,
        "rounds_in_loop": o.rounds_in_loop,
        "repeats_past_budget": o.repeats,
        "detail": o.detail,
    }


def table(summary: dict[str, Any]) -> str:
    """The figures as a Markdown table (docs/loop-detection.md shows it)."""
    rows = [
        "| loop trace | period | budget | pattern starts | stopped after round | rounds in loop | repeats |",
        "|---|---|---|---|---|---|---|",
    ]
    for loop in summary["loops"]:
        rows.append(
            f"| {loop['name']} | {loop['period']} | {loop['budget']} | {loop['pattern_starts_at_round']} | "
            f"{loop['stopped_after_round']} | {loop['rounds_in_loop']} | {loop['repeats_past_budget']:g} |"
        )
    head = (
        f"progress traces: {summary['progress_traces']}, false positives: {len(summary['false_positives'])}; "
        f"loop traces: {summary['loop_traces']}, missed: {len(summary['loops_missed'])}; "
        f"precision {summary['precision']:.2f}, recall {summary['recall']:.2f}, "
        f"at most {summary['max_repeats_past_budget']:g} repeat(s) past the budget before the stop"
    )
    return "\n".join([head, "", *rows])


def main() -> None:
    outcomes = [run_trace(trace) for trace in load_corpus()]
    summary = summarize(outcomes)
    publish(summary, OUT, corpus=str(CORPUS.name), settings={"max_period": LoopSettings().max_period})
    print(table(summary))


if __name__ == "__main__":
    main()
