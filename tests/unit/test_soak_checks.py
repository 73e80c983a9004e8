"""The soak's invariant checks on hand-made evidence: each failure is caught and named."""

from __future__ import annotations

import json
from pathlib import Path

from agentloop.v1 import agent_pb2, common_pb2
from bench.soak_checks import (
    RunRow,
    lost_ends,
    read_tool_log,
    reused_event_numbers,
    streams_without_end,
    tool_calls_misanswered,
    tool_calls_run_twice,
    unfinished_runs,
    unstored_events,
)
from bench.soak_clients import RunRecord, StreamRecord, ending_kind


def event(sequence: int, kind: str, node: str = "agent") -> agent_pb2.RunEvent:
    e = agent_pb2.RunEvent(run_id="r1", sequence=sequence, thread_id="t1")
    if kind == "node_start":
        e.node_start.node = node
    elif kind == "final":
        e.final.final_reply = "ok"
    elif kind == "interrupt":
        e.interrupt.reason = "approval required"
    elif kind == "decision":
        e.decision.kind = agent_pb2.DECISION_KIND_APPROVAL
    elif kind == "node_end":
        e.node_end.node = node
    return e


def record_of(*streams: list[agent_pb2.RunEvent]) -> RunRecord:
    record = RunRecord(workload="stream", thread_id="t1", run_id="r1")
    for events in streams:
        stream = StreamRecord(rpc="Watch", gateway="gw", end="terminal:final")
        for e in events:
            data = e.SerializeToString(deterministic=True)
            if record.seen.get(e.sequence, data) != data:
                record.conflicts.append(f"sequence {e.sequence} differs")
            record.seen.setdefault(e.sequence, data)
            stream.sequences.append(e.sequence)
        record.streams.append(stream)
    return record


def write_log(path: Path, *rows: tuple[str, str, str]) -> Path:
    with path.open("w") as fh:
        for phase, run, call in rows:
            fh.write(json.dumps({"phase": phase, "tag": "x", "run": run, "call": call, "pid": 1}) + "\n")
    return path


def test_a_pause_ends_with_its_interrupt_even_with_trailing_decision_and_node_end() -> None:
    assert ending_kind(["node_start", "interrupt", "decision", "node_end"]) == "interrupt"
    assert ending_kind(["node_start", "final"]) == "final"
    assert ending_kind(["node_start", "node_end"]) == "node_end"


def test_runs_not_ended_are_unfinished_unless_left_paused_on_purpose() -> None:
    rows = [
        RunRow("a", "t", "completed", ""),
        RunRow("b", "t", "running", "gw-1"),
        RunRow("c", "t", "paused", ""),
        RunRow("d", "t", "paused", ""),
    ]
    problems = unfinished_runs(rows, left_paused={"c"})
    assert problems == [
        "run b (thread t) is running, owner gw-1",
        "run d (thread t) is paused, owner -",
    ]


def test_a_call_finished_twice_is_reported_with_its_run_and_id(tmp_path: Path) -> None:
    log = read_tool_log(
        write_log(
            tmp_path / "log",
            ("start", "r1", "c1"),
            ("finish", "r1", "c1"),
            ("start", "r1", "c1"),
            ("finish", "r1", "c1"),
            ("start", "r1", "c2"),
        )
    )
    assert tool_calls_run_twice(log) == ["run r1 call c1 executed 2 times (processes [1, 1])"]


def test_a_result_of_another_call_and_a_double_answer_are_caught(tmp_path: Path) -> None:
    log = read_tool_log(write_log(tmp_path / "log", ("finish", "r1", "call_0")))
    call = common_pb2.ToolCall(id="call_0", name="soak_work", arguments_json='{"tag": "ids-s1c0"}')
    messages = [
        common_pb2.Message(tool_calls=[call]),
        common_pb2.Message(tool_call_id="call_0", content="done ids-s0c0"),
        common_pb2.Message(tool_call_id="call_0", content="done ids-s0c0"),
    ]
    problems = tool_calls_misanswered({"t1": messages}, {"t1": [RunRow("r1", "t1", "completed", "")]}, log)
    assert "thread t1: call call_0 (ids-s1c0) answered 2 times" in problems
    assert "thread t1: call call_0 (ids-s1c0) got another call's result 'done ids-s0c0'" in problems


def test_an_event_seen_live_but_stored_as_another_is_a_reused_number() -> None:
    live = [event(1, "node_start"), event(2, "node_end")]
    stored = {"r1": [event(1, "node_start"), event(2, "node_start", node="tools"), event(3, "final")]}
    problems = reused_event_numbers([record_of(live)], stored)
    assert problems == [
        "run r1 (stream): sequence 2 seen as node_end, stored as node_start (a different event)"
    ]


def test_numbers_going_backwards_are_reported_and_lost_events_are_told_from_lost_ends() -> None:
    live = [event(1, "node_start"), event(3, "node_end"), event(2, "node_end")]
    problems = reused_event_numbers([record_of(live)], {"r1": [event(1, "node_start")]})
    assert "run r1 (stream): stream 0 (Watch on gw) went from sequence 3 to 2" in problems
    assert not any("never stored" in p for p in problems)
    stored = {"r1": [event(1, "node_start")]}
    assert unstored_events([record_of(live)], stored) == [
        "run r1 (stream): sequence 2 (node_end) seen, never stored",
        "run r1 (stream): sequence 3 (node_end) seen, never stored",
    ]
    assert lost_ends(unstored_events([record_of([event(1, "node_start"), event(2, "final")])], stored)) == [
        "run r1 (stream): sequence 2 (final) seen, never stored"
    ]


def test_a_stream_closed_without_an_end_and_stored_events_without_one_are_reported() -> None:
    record = record_of([event(1, "node_start")])
    record.streams[0].end = "no-terminal"
    rows = [RunRow("r1", "t1", "completed", "")]
    problems = streams_without_end([record], {"r1": [event(1, "node_start")]}, rows)
    assert problems == [
        "run r1 (stream): stream 0 (Watch on gw) closed OK after sequence 1 without final or error",
        "run r1 (completed): stored events end with node_start",
    ]


def token(sequence: int, text: str, step: int = 1) -> agent_pb2.RunEvent:
    e = agent_pb2.RunEvent(run_id="r1", sequence=sequence, thread_id="t1")
    e.llm_token.token = text
    e.llm_token.step = step
    return e


def test_stored_tokens_joined_under_the_last_number_match_the_live_tokens() -> None:
    live = [event(1, "node_start"), token(2, "Hel"), token(3, "lo"), token(4, "!"), event(5, "final")]
    stored = {"r1": [event(1, "node_start"), token(4, "Hello!"), event(5, "final")]}
    record = record_of(live)
    assert reused_event_numbers([record], stored) == []
    assert unstored_events([record], stored) == []


def test_a_stored_token_event_with_other_text_than_the_live_tokens_is_a_reused_number() -> None:
    live = [event(1, "node_start"), token(2, "Hel"), token(3, "lo"), event(4, "final")]
    stored = {"r1": [event(1, "node_start"), token(3, "Help"), event(4, "final")]}
    problems = reused_event_numbers([record_of(live)], stored)
    assert problems == ["run r1 (stream): sequence 3 seen as a token the stored event 3 does not end with"]
    stored = {"r1": [event(1, "node_start"), token(3, "Jello"), event(4, "final")]}
    problems = reused_event_numbers([record_of(live)], stored)
    assert problems == ["run r1 (stream): sequence 3: stored text differs from the live tokens 2..3"]
