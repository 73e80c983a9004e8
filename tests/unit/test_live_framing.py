"""Framing of run events into NOTIFY payloads, and a stream's switch from live events to the store."""

from __future__ import annotations

from typing import cast

import pytest

from agentloop.v1 import agent_pb2
from gateway.runs.following import _Progress
from gateway.runs.live import (
    LOST,
    MAX_BACKLOG,
    MAX_LIVE_EVENT_BYTES,
    REPLAY_ATTEMPTS,
    Decoder,
    Feed,
    LiveEvents,
    Replay,
    encode,
)
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
    progress.live(decision(1, "start"))
    for sequence, text in enumerate(["Hel", "lo ", "wor"], start=2):
        progress.live(token(sequence, text))
    # Reading resumes after the last other event; the store joined tokens 2..6 under number 6:
    # only what was not sent live goes out.
    assert progress.read_from == 1
    stored = progress.stored(token(6, "Hello world!"))
    assert stored is not None
    assert stored.llm_token.token == "ld!"
    assert stored.sequence == 6
    # Another step's tokens, or a stream that sent nothing live, are left whole.
    again = progress.stored(token(9, "Hello", step=2))
    assert again is not None
    assert again.llm_token.token == "Hello"


def test_text_sent_live_is_cut_by_length_across_stored_pieces_even_when_it_repeats() -> None:
    """A step's text split over two stored events; the text repeats, so no prefix matching can tell."""
    progress = _Progress(4)
    for sequence in range(5, 11):
        progress.live(token(sequence, "ab"))
    assert progress.read_from == 4
    # Tokens 5..8 stored as one event, 9..12 as another: 12 characters sent, 4 left.
    assert progress.stored(token(8, "abababab")) is None
    rest = progress.stored(token(12, "abababab"))
    assert rest is not None
    assert (rest.llm_token.token, rest.sequence) == ("abab", 12)
    assert progress.read_from == 12
    assert progress.stored(token(12, "abababab")) is None


async def test_a_watcher_that_does_not_keep_up_is_sent_to_the_store() -> None:
    feed = Feed(cast(LiveEvents, None), "r")
    payload = encode([token(1, "a")])[0]
    for _ in range(MAX_BACKLOG + 5):
        feed.payload(payload)
    assert feed.queue.qsize() == MAX_BACKLOG + 1
    items = [feed.queue.get_nowait() for _ in range(MAX_BACKLOG + 1)]
    assert items[-1] is LOST


def replay_payloads(nonce: str, events: list[agent_pb2.RunEvent]) -> list[str]:
    return [f"R{nonce} 1", *encode(events), f"Z{nonce}"]


async def test_a_feed_drops_answers_to_replays_it_did_not_ask_for() -> None:
    """Every watcher hears every replay; another's snapshot (a step's tokens joined) is not live."""
    sent: list[str] = []
    answering: list[bool] = []

    class Owner:
        def send_control(self, instance_id: str, message: str) -> None:
            sent.append(message)
            if answering:
                nonce = message.split(" ")[-1]
                for payload in [
                    *replay_payloads("late", [token(9, "x")]),
                    *replay_payloads(nonce, [token(9, "ab")]),
                ]:
                    feed.payload(payload)
                feed.payload(encode([token(10, "c")])[0])

    feed = Feed(cast(LiveEvents, Owner()), "r")
    for payload in replay_payloads("other", [token(7, "Hello world")]):
        feed.payload(payload)
    feed.payload(encode([token(8, "!")])[0])
    assert feed.queue.get_nowait() == token(8, "!")
    assert feed.queue.empty()

    answering.append(True)
    replayed = await feed.replay("owner", 6)
    assert replayed == ([token(9, "ab")], [])
    # After the answer, the feed waits for none: the same nonce again is somebody else's.
    assert feed.queue.get_nowait() == token(10, "c")
    for payload in replay_payloads(sent[-1].split(" ")[-1], [token(11, "d")]):
        feed.payload(payload)
    assert feed.queue.empty()


async def test_an_owner_that_answers_late_is_asked_again_and_its_late_answer_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("gateway.runs.live.REPLAY_TIMEOUT_S", 0.01)
    sent: list[str] = []

    class Owner:
        def send_control(self, instance_id: str, message: str) -> None:
            sent.append(message)
            if len(sent) == 2:  # the answer to the first request arrives while the second is pending
                for payload in replay_payloads(sent[0].split(" ")[-1], [token(5, "stale")]):
                    feed.payload(payload)
                for payload in replay_payloads(sent[1].split(" ")[-1], [token(5, "fresh")]):
                    feed.payload(payload)

    feed = Feed(cast(LiveEvents, Owner()), "r")
    assert await feed.replay("owner", 0) == ([token(5, "fresh")], [])
    assert len(sent) == 2


async def test_an_owner_that_never_answers_sends_the_watcher_to_the_store(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("gateway.runs.live.REPLAY_TIMEOUT_S", 0.001)
    sent: list[str] = []

    class Owner:
        def send_control(self, instance_id: str, message: str) -> None:
            sent.append(message)

    feed = Feed(cast(LiveEvents, Owner()), "r")
    feed.payload(encode([token(3, "live")])[0])
    assert await feed.replay("owner", 0) is None
    assert len(sent) == REPLAY_ATTEMPTS
