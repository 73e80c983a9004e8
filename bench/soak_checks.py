"""The soak's invariants, checked once the chaos is over, each failure naming its run, call or sequence.

- unfinished_runs: every run in the runs table is COMPLETED, FAILED or
  CANCELLED, or PAUSED when its client chose to leave it paused;
- tool_calls_run_twice: the durable tool log holds at most one finished
  execution per (run, call id);
- tool_calls_misanswered: in every thread each call the model made is
  answered exactly once, by its own result (the tag it was called with);
- reused_event_numbers: within each stream numbers strictly increase, and an
  event a client saw with number n (live or through Watch) is the very event
  stored with number n;
- streams_without_end: a stream that closed OK ended with final or error (or
  interrupt for a paused run), and each run's stored events end that way too;
- lost_ends: no client saw a final or error event that the store does not hold.

Events a client saw that were never stored (lost with a killed gateway, their
numbers left unused) are counted as a figure, not a failure: a client can tell
them from a replay.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agentloop.v1 import agent_pb2, common_pb2
from bench.soak_clients import RunRecord, ending_kind

ENDED = ("completed", "failed", "cancelled")
INVARIANTS = (
    "unfinished_runs",
    "tool_calls_run_twice",
    "tool_calls_misanswered",
    "reused_event_numbers",
    "streams_without_end",
    "lost_ends",
)


@dataclass(frozen=True)
class RunRow:
    """A row of the runs table, as the checker needs it."""

    run_id: str
    thread_id: str
    status: str
    owner: str


@dataclass(frozen=True)
class ToolLog:
    """Executions of the soak's tools, read from their durable log."""

    started: Counter[tuple[str, str]]
    finished: Counter[tuple[str, str]]
    pids: dict[tuple[str, str], list[int]]
    unreadable_lines: int


def read_tool_log(path: Path) -> ToolLog:
    started: Counter[tuple[str, str]] = Counter()
    finished: Counter[tuple[str, str]] = Counter()
    pids: dict[tuple[str, str], list[int]] = defaultdict(list)
    bad = 0
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    for line in lines:
        try:
            row = json.loads(line)
            key = (str(row["run"]), str(row["call"]))
            phase = row["phase"]
        except (ValueError, KeyError, TypeError):
            bad += 1
            continue
        if phase == "start":
            started[key] += 1
        else:
            finished[key] += 1
            pids[key].append(int(row["pid"]))
    return ToolLog(started, finished, dict(pids), bad)


def unfinished_runs(rows: Iterable[RunRow], left_paused: set[str]) -> list[str]:
    problems = []
    for row in rows:
        if row.status in ENDED or (row.status == "paused" and row.run_id in left_paused):
            continue
        problems.append(
            f"run {row.run_id} (thread {row.thread_id}) is {row.status}, owner {row.owner or '-'}"
        )
    return problems


def tool_calls_run_twice(log: ToolLog) -> list[str]:
    return [
        f"run {run} call {call} executed {count} times (processes {log.pids[(run, call)]})"
        for (run, call), count in sorted(log.finished.items())
        if count > 1
    ]


def tool_calls_misanswered(
    threads: Mapping[str, Sequence[common_pb2.Message]],
    runs_of_thread: Mapping[str, list[RunRow]],
    log: ToolLog,
) -> list[str]:
    """Each call answered once, by its own result; a 'done' result backed by exactly one execution."""
    problems: list[str] = []
    for thread_id, messages in sorted(threads.items()):
        rows = runs_of_thread.get(thread_id, [])
        if any(row.status not in ENDED for row in rows):
            continue  # a paused run's pending calls are not answered yet
        run_ids = [row.run_id for row in rows]
        calls: dict[str, str] = {}
        for message in messages:
            for call in message.tool_calls:
                if call.id in calls:
                    problems.append(f"thread {thread_id}: call id {call.id} used by two calls")
                calls[call.id] = _tag(call.arguments_json)
        answers = Counter(m.tool_call_id for m in messages if m.tool_call_id)
        for call_id, tag in calls.items():
            if answers[call_id] != 1:
                problems.append(
                    f"thread {thread_id}: call {call_id} ({tag}) answered {answers[call_id]} times"
                )
        for message in messages:
            if not message.tool_call_id:
                continue
            if message.tool_call_id not in calls:
                problems.append(f"thread {thread_id}: result for unknown call {message.tool_call_id}")
                continue
            problems.extend(_check_result(thread_id, run_ids, message, calls[message.tool_call_id], log))
    return problems


def _check_result(
    thread_id: str, run_ids: list[str], message: common_pb2.Message, tag: str, log: ToolLog
) -> list[str]:
    if not message.content.startswith("done "):
        return []  # an error, rejected or cancelled result: nothing ran to completion
    call_id = message.tool_call_id
    if message.content != f"done {tag}":
        return [f"thread {thread_id}: call {call_id} ({tag}) got another call's result {message.content!r}"]
    executions = sum(log.finished[(run, call_id)] for run in run_ids)
    if executions == 0:
        return [f"thread {thread_id}: call {call_id} ({tag}) has a result but never finished executing"]
    return []


def _tag(arguments_json: str) -> str:
    try:
        return str(json.loads(arguments_json).get("tag", ""))
    except (ValueError, AttributeError):
        return ""


def reused_event_numbers(
    records: Iterable[RunRecord], stored: Mapping[str, Sequence[agent_pb2.RunEvent]]
) -> list[str]:
    problems: list[str] = []
    for record in records:
        if not record.run_id:
            continue
        where = f"run {record.run_id} ({record.workload})"
        problems.extend(f"{where}: {conflict}" for conflict in record.conflicts)
        problems.extend(f"{where}: {problem}" for problem in _stream_order_problems(record))
        kept = {e.sequence: e for e in stored.get(record.run_id, ())}
        problems.extend(f"{where}: {problem}" for problem in _seen_unlike_stored(record, kept))
    for run_id, events in sorted(stored.items()):
        numbers = [e.sequence for e in events]
        for before, after in itertools.pairwise(numbers):
            if after <= before:
                problems.append(f"run {run_id}: stored sequence {before} followed by {after}")
    return problems


def _stream_order_problems(record: RunRecord) -> list[str]:
    """Each client stream's sequences must rise: a step back means a number was given twice."""
    return [
        f"stream {index} ({stream.rpc} on {stream.gateway}) went from sequence {before} to {after}"
        for index, stream in enumerate(record.streams)
        for before, after in itertools.pairwise(stream.sequences)
        if after <= before
    ]


def _seen_unlike_stored(record: RunRecord, kept: Mapping[int, agent_pb2.RunEvent]) -> list[str]:
    """Events the client saw that the store holds as another event under the same number."""
    problems: list[str] = []
    for sequence, data in sorted(record.seen.items()):
        seen = agent_pb2.RunEvent.FromString(data)
        if sequence not in kept:
            continue  # an event lost in a crash whose number stays unused: see unstored_events
        if seen.WhichOneof("event") == kept[sequence].WhichOneof("event") == "llm_token":
            problem = _joined_token_problem(sequence, kept, record.seen)
            if problem:
                problems.append(problem)
            continue
        if kept[sequence].SerializeToString(deterministic=True) != data:
            problems.append(
                f"sequence {sequence} seen as {seen.WhichOneof('event')}, "
                f"stored as {kept[sequence].WhichOneof('event')} (a different event)"
            )
    return problems


def _joined_token_problem(
    sequence: int, kept: Mapping[int, agent_pb2.RunEvent], seen: Mapping[int, bytes]
) -> str:
    """Check a stored token event against the live tokens it joins ("" when they agree).

    The store keeps a step's consecutive tokens joined into one event numbered
    like the last of them; the live stream delivered them one by one. The
    stored text must be exactly the live tokens numbered after the previous
    stored event up to this one (when the client saw them all), and must end
    with the live token of the same number in any case.
    """
    stored = kept[sequence].llm_token
    previous = max((n for n in kept if n < sequence), default=0)
    live = [agent_pb2.RunEvent.FromString(seen[n]) for n in range(previous + 1, sequence + 1) if n in seen]
    tokens = [e.llm_token for e in live if e.WhichOneof("event") == "llm_token"]
    last = agent_pb2.RunEvent.FromString(seen[sequence]).llm_token
    if any(t.step != stored.step for t in tokens):
        return f"sequence {sequence}: stored tokens of step {stored.step} join tokens of another step"
    if not stored.token.endswith(last.token) or not stored.reasoning_token.endswith(last.reasoning_token):
        return f"sequence {sequence} seen as a token the stored event {sequence} does not end with"
    if len(tokens) != len(live):
        return f"sequences {previous + 1}..{sequence}: a live non-token event inside a stored token run"
    if len(live) == sequence - previous and not _joins(tokens, stored):
        return f"sequence {sequence}: stored text differs from the live tokens {previous + 1}..{sequence}"
    return ""


def _joins(tokens: Sequence[agent_pb2.LlmToken], stored: agent_pb2.LlmToken) -> bool:
    """Whether the stored token event's text is exactly the live tokens' text, joined."""
    return (
        "".join(t.token for t in tokens) == stored.token
        and "".join(t.reasoning_token for t in tokens) == stored.reasoning_token
    )


def _covered_by_joined_tokens(sequence: int, data: bytes, kept: Mapping[int, agent_pb2.RunEvent]) -> bool:
    """Whether a live token's number is inside a stored joined token event (the next stored one)."""
    if agent_pb2.RunEvent.FromString(data).WhichOneof("event") != "llm_token":
        return False
    following = min((n for n in kept if n > sequence), default=None)
    return following is not None and kept[following].WhichOneof("event") == "llm_token"


def unstored_events(
    records: Iterable[RunRecord], stored: Mapping[str, Sequence[agent_pb2.RunEvent]]
) -> list[str]:
    """Events a client saw whose number the store never holds (lost when their gateway died).

    Not a reused number by itself: a run may leave a lost event's number unused
    and go on above it. A lost final or error is a failure (see lost_ends).
    """
    lost: list[str] = []
    for record in records:
        kept = {e.sequence: e for e in stored.get(record.run_id, ())}
        for sequence, data in sorted(record.seen.items()):
            if (
                record.run_id in stored
                and sequence not in kept
                and not _covered_by_joined_tokens(sequence, data, kept)
            ):
                kind = agent_pb2.RunEvent.FromString(data).WhichOneof("event")
                where = f"run {record.run_id} ({record.workload})"
                lost.append(f"{where}: sequence {sequence} ({kind}) seen, never stored")
    return lost


def lost_ends(unstored: Iterable[str]) -> list[str]:
    """A final or error a client saw that the store does not hold: it was told an end that never was."""
    return [item for item in unstored if "(final)" in item or "(error)" in item]


def streams_without_end(
    records: Iterable[RunRecord], stored: Mapping[str, Sequence[agent_pb2.RunEvent]], rows: Iterable[RunRow]
) -> list[str]:
    problems: list[str] = []
    for record in records:
        for index, stream in enumerate(record.streams):
            if stream.end == "no-terminal":
                last = stream.sequences[-1] if stream.sequences else 0
                problems.append(
                    f"run {record.run_id} ({record.workload}): stream {index} ({stream.rpc} on "
                    f"{stream.gateway}) closed OK after sequence {last} without final or error"
                )
    status = {row.run_id: row.status for row in rows}
    for run_id, events in sorted(stored.items()):
        expected = ("interrupt",) if status.get(run_id) == "paused" else ("final", "error")
        last_kind = ending_kind([str(e.WhichOneof("event")) for e in events])
        if status.get(run_id) in (*ENDED, "paused") and last_kind not in expected:
            problems.append(f"run {run_id} ({status.get(run_id)}): stored events end with {last_kind}")
    return problems


def check_all(
    records: Sequence[RunRecord],
    rows: Sequence[RunRow],
    stored: Mapping[str, Sequence[agent_pb2.RunEvent]],
    threads: Mapping[str, Sequence[common_pb2.Message]],
    log: ToolLog,
) -> dict[str, list[str]]:
    """Every invariant's failures (an empty list when it held)."""
    left_paused = {r.run_id for r in records if r.leave_paused and r.run_id}
    runs_of_thread: dict[str, list[RunRow]] = defaultdict(list)
    for row in rows:
        runs_of_thread[row.thread_id].append(row)
    unstored = unstored_events(records, stored)
    return {
        "unfinished_runs": unfinished_runs(rows, left_paused),
        "tool_calls_run_twice": tool_calls_run_twice(log),
        "tool_calls_misanswered": tool_calls_misanswered(threads, runs_of_thread, log),
        "reused_event_numbers": reused_event_numbers(records, stored),
        "streams_without_end": streams_without_end(records, stored, rows),
        "lost_ends": lost_ends(unstored),
    }
