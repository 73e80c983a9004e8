"""The event sink: every token live, tokens joined in what it keeps, no number sent unreserved."""

from __future__ import annotations

from agentloop.v1 import agent_pb2, common_pb2
from gateway.journal.events import END_OF_RUN, RESERVE_BLOCK, TOKEN_COALESCE_BYTES, EventSink


def drained(queue: object) -> list[agent_pb2.RunEvent]:
    events = []
    while not queue.empty():  # type: ignore[attr-defined]
        events.append(queue.get_nowait())  # type: ignore[attr-defined]
    return events


def reserved_sink(upto: int = 10**9) -> EventSink:
    sink = EventSink("run", "thread")
    sink.reserved_upto(upto)
    return sink


def test_subscribers_get_every_token_while_history_and_buffer_keep_them_joined() -> None:
    sink = reserved_sink()
    queue = sink.subscribe()
    tokens = [f"t{i} " for i in range(100_000)]
    sink.node_start("agent", 1)
    for token in tokens:
        sink.token(1, token)
    sink.node_end("agent", 1, 1.0)
    live = drained(queue)
    assert len(live) == len(tokens) + 2
    assert [e.sequence for e in live] == list(range(1, len(tokens) + 3))
    text = "".join(tokens)
    bound = len(text) // TOKEN_COALESCE_BYTES + 4
    for kept in (sink.history, sink.drain()):
        assert len(kept) <= bound, f"{len(kept)} events kept for {len(tokens)} tokens"
        joined = [e for e in kept if e.WhichOneof("event") == "llm_token"]
        assert "".join(e.llm_token.token for e in joined) == text
        assert [e.sequence for e in kept] == sorted({e.sequence for e in kept})
        assert kept[-1].node_end.node == "agent"
        assert kept[-1].sequence == len(tokens) + 2
    assert sink.drain() == []


def test_tokens_of_different_steps_are_not_joined() -> None:
    sink = reserved_sink()
    sink.token(1, "a")
    sink.token(1, "b")
    sink.token(2, "c")
    assert [(e.sequence, e.llm_token.step, e.llm_token.token) for e in sink.history] == [
        (2, 1, "ab"),
        (3, 2, "c"),
    ]


def test_events_wait_for_their_numbers_to_be_reserved() -> None:
    asked: list[int] = []
    sink = EventSink("run", "thread", last_sequence=40)
    sink.on_reserve = asked.append
    queue = sink.subscribe()
    sink.node_start("agent", 1)
    sink.token(1, "x")
    assert asked == [41 + RESERVE_BLOCK]  # asked once, for a block beyond the first new number
    assert drained(queue) == []
    assert sink.held_count == 2
    sink.reserved_upto(asked[0])
    assert [e.sequence for e in drained(queue)] == [41, 42]
    assert sink.held_count == 0


def test_a_failed_reservation_is_asked_for_again() -> None:
    asked: list[int] = []
    sink = EventSink("run", "thread")
    sink.on_reserve = asked.append
    sink.node_start("agent", 1)
    sink.reservation_failed()
    sink.node_end("agent", 1, 1.0)
    assert len(asked) == 2


def test_a_terminal_event_waits_for_the_checkpoint_that_stores_it() -> None:
    sink = reserved_sink()
    queue = sink.subscribe()
    sink.node_end("finalize", 1, 1.0)
    sink.final(agent_pb2.RunFinal(final_reply="done"))
    assert [e.WhichOneof("event") for e in drained(queue)] == ["node_end"]
    sink.stored_upto(2)
    assert [e.WhichOneof("event") for e in drained(queue)] == ["final"]


def test_results_the_next_checkpoint_records_hold_what_follows_until_it_commits() -> None:
    sink = reserved_sink()
    queue = sink.subscribe()
    sink.tool_start("add", "{}", "c1")
    sink.hold_until_stored()
    sink.tool_end(common_pb2.ToolResult(tool_call_id="c1", name="add", content="4"))
    sink.node_end("tools", 1, 1.0)
    assert [e.WhichOneof("event") for e in drained(queue)] == ["tool_start"]
    sink.stored_upto(sink.sequence)
    assert [e.sequence for e in drained(queue)] == [2, 3]
    sink.node_start("agent", 2)  # the hold ended with that commit
    assert [e.sequence for e in drained(queue)] == [4]
    sink.final(agent_pb2.RunFinal(final_reply="done"))  # a terminal event still waits for its own
    assert drained(queue) == []


def test_closing_drops_what_nobody_saw() -> None:
    sink = reserved_sink()
    queue = sink.subscribe()
    sink.error("INTERNAL", "boom", "agent")
    sink.close()
    assert drained(queue) == [END_OF_RUN]
    assert sink.history == []
