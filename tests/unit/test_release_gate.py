"""The release gate lets an event out only once the store holds what it must: numbers, outcomes, results."""

from __future__ import annotations

from agentloop.v1 import agent_pb2
from gateway.journal.release import ReleaseGate


def event(sequence: int, kind: str = "node_start") -> agent_pb2.RunEvent:
    ev = agent_pb2.RunEvent(sequence=sequence)
    if kind == "final":
        ev.final.final_reply = "done"
    elif kind == "error":
        ev.error.message = "failed"
    else:
        ev.node_start.node = "agent"
    return ev


def sequences(events: list[agent_pb2.RunEvent]) -> list[int]:
    return [e.sequence for e in events]


def test_nothing_goes_out_beyond_the_reserved_numbers() -> None:
    gate = ReleaseGate()
    assert gate.admit(event(1)) is False
    assert gate.admit(event(2)) is False
    assert sequences(gate.reserved_upto(1)) == [1]
    assert sequences(gate.reserved_upto(10)) == [2]
    assert gate.admit(event(3)) is True


def test_an_outcome_and_what_follows_wait_for_the_checkpoint_that_stores_it() -> None:
    for kind in ("final", "error"):
        gate = ReleaseGate()
        gate.reserved_upto(100)
        assert gate.admit(event(1)) is True
        assert gate.admit(event(2, kind)) is False
        assert gate.admit(event(3)) is False
        assert gate.stored_upto(1) == []
        assert sequences(gate.stored_upto(3)) == [2, 3]


def test_results_the_next_checkpoint_records_wait_for_it() -> None:
    gate = ReleaseGate()
    gate.reserved_upto(100)
    assert gate.admit(event(1)) is True
    gate.hold_until_stored(2)
    assert gate.admit(event(2)) is False
    assert sequences(gate.stored_upto(2)) == [2]
    assert gate.admit(event(3)) is True


def test_what_is_held_when_the_run_stops_here_is_dropped() -> None:
    gate = ReleaseGate()
    gate.admit(event(1))
    assert gate.held_count == 1
    gate.drop_held()
    assert gate.held_count == 0
    assert gate.reserved_upto(10) == []
