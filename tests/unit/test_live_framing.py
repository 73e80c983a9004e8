"""Framing of run events into NOTIFY payloads, and a stream's switch from live events to the store."""

from __future__ import annotations

from typing import cast

from agentloop.v1 import agent_pb2
from gateway.following import _Progress
from gateway.live import LOST, MAX_BACKLOG, MAX_LIVE_EVENT_BYTES, Decoder, Feed, LiveEvents, Replay, encode
from gateway.store.notify import MAX_PAYLOAD, channel_name


def token(sequence: int, text: str, step: int = 1) -> agent_pb2.RunEvent:
    event = agent_pb2.RunEvent(run_id="r", sequence=sequence)
    event.llm_token.token = text
    event.llm_token.step = step
    return event


def decision(sequence: int, detail: str) -> agent_pb2.RunEvent:
    event = agent_pb2.RunEvent(run_id="r", sequence=sequence)
    event.decision.kind = agent_pb2.DECISION_KIND_RESUMED
    event.decision.detail = detail
    return event


def test_small_events_share_payloads_and_come_back_in_order() -> None:
    events = [token(i, f"t{i} ") for i in range(1, 500)]
    payloads = encode(events)
    assert 1 < len(payloads) < 20
    assert all(len(p.encode()) < MAX_PAYLOAD for p in payloads)
    decoder = Decoder()
    assert [item for p in payloads for item in decoder.feed(p)] == events


def test_a_big_event_travels_in_parts_and_a_huge_one_sends_the_watcher_to_the_store() -> None:
    big, huge = decision(7, "x" * 100_000), decision(8, "y" * (MAX_LIVE_EVENT_BYTES + 1))
    payloads = encode([token(6, "a"), big, huge, token(9, "b")])
    assert all(len(p.encode()) < MAX_PAYLOAD for p in payloads)
    decoder = Decoder()
    assert [item for p in payloads for item in decoder.feed(p)] == [token(6, "a"), big, LOST, token(9, "b")]


def test_garbled_or_out_of_order_parts_are_lost_not_guessed() -> None:
    parts = [p for p in encode([decision(3, "z" * 20_000)]) if p.startswith("C")]
    assert len(parts) > 1
    assert Decoder().feed(parts[1]) == [LOST]
    assert Decoder().feed("E!!!") == [LOST]
    assert Decoder().feed("Rabc 1") == [Replay("abc", here=True, end=False)]


def test_channel_names_are_bounded_whatever_the_key() -> None:
    assert len(channel_name("run", "r" * 10_000)) < 63
    assert channel_name("run", "a") != channel_name("gw", "a")


def test_a_stream_falling_back_to_the_store_does_not_repeat_token_text() -> None:
    progress = _Progress(0)
    for sequence, text in enumerate(["Hel", "lo ", "wor"], start=1):
        progress.live(token(sequence, text))
    # The store joined tokens 1..5 under number 5: only what was not sent live goes out.
    stored = progress.stored(token(5, "Hello world!"))
    assert stored.llm_token.token == "ld!"
    assert stored.sequence == 5
    # Another step's tokens, or a stream that sent nothing live, are left whole.
    assert progress.stored(token(9, "Hello", step=2)).llm_token.token == "Hello"


async def test_a_watcher_that_does_not_keep_up_is_sent_to_the_store() -> None:
    feed = Feed(cast(LiveEvents, None), "r")
    payload = encode([token(1, "a")])[0]
    for _ in range(MAX_BACKLOG + 5):
        feed.payload(payload)
    assert feed.queue.qsize() == MAX_BACKLOG + 1
    items = [feed.queue.get_nowait() for _ in range(MAX_BACKLOG + 1)]
    assert items[-1] is LOST
