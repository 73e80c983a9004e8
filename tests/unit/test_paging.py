"""Page tokens (gateway.api.paging), response budgets and cut messages (gateway.journal.budget).

Without a gateway.
"""

from __future__ import annotations

import pytest

from agentloop.kernel.errors import InvalidArgument
from agentloop.v1 import agent_pb2, common_pb2
from gateway.api.paging import PageTokens, page_size
from gateway.journal.budget import RESPONSE_BYTES, bounded_final, cut_text, message_part

TOKENS = PageTokens(b"k" * 32)


def test_a_token_reads_back_only_for_the_request_it_was_issued_for() -> None:
    token = TOKENS.issue("ListRuns", ("ana", "t1"), ["2026-01-01T00:00:00+00:00", "run-1"])
    assert TOKENS.read("ListRuns", ("ana", "t1"), token, (str, str)) == ["2026-01-01T00:00:00+00:00", "run-1"]
    assert TOKENS.read("ListRuns", ("ana", "t1"), "", (str, str)) is None
    for rpc, binding in (
        ("ListThreads", ("ana", "t1")),
        ("ListRuns", ("bo", "t1")),
        ("ListRuns", ("ana", "t2")),
    ):
        with pytest.raises(InvalidArgument, match=r"^page_token"):
            TOKENS.read(rpc, binding, token, (str, str))
    # Another deployment's key, or a position of another shape, is refused too.
    with pytest.raises(InvalidArgument):
        PageTokens(b"x" * 32).read("ListRuns", ("ana", "t1"), token, (str, str))
    with pytest.raises(InvalidArgument):
        TOKENS.read("ListRuns", ("ana", "t1"), token, (int,))


def test_the_binding_cannot_be_shifted_between_its_parts() -> None:
    token = TOKENS.issue("GetThread", ("ana", "t1", ""), [0, 0, 0])
    with pytest.raises(InvalidArgument):
        TOKENS.read("GetThread", ("ana", "t", "1"), token, (int, int, int))


@pytest.mark.parametrize("forged", ["7", "9223372036854775807", "-1", "====", "é", "A" * 3000, "AAAA" * 8])
def test_forged_tokens_are_refused(forged: str) -> None:
    with pytest.raises(InvalidArgument, match=r"^page_token"):
        TOKENS.read("GetThread", ("ana", "t1", ""), forged, (int, int, int))


def test_page_size_defaults_and_bounds() -> None:
    assert page_size(0) == 100
    assert page_size(1000) == 1000
    for bad in (-1, 1001):
        with pytest.raises(InvalidArgument, match=r"^page_size"):
            page_size(bad)


def test_text_is_cut_on_whole_characters() -> None:
    assert cut_text("ééé", 5) == "éé"
    assert cut_text("abc", 10) == "abc"


def test_a_message_too_big_for_a_page_is_cut_reasoning_first_and_continued() -> None:
    call = common_pb2.ToolCall(id="c1", name="f", arguments_json="{}")
    message = common_pb2.Message(
        role=common_pb2.ROLE_ASSISTANT, reasoning_content="r" * 300, content="c" * 500, tool_calls=[call]
    )
    parts, at = [], (0, 0)
    while True:
        part = message_part(message, at[0], at[1], 400)
        assert part is not None
        piece, content_at, reasoning_at = part
        parts.append(piece)
        if content_at < 0:
            break
        at = (content_at, reasoning_at)
    assert len(parts) > 2
    assert [len(p.tool_calls) for p in parts] == [1] + [0] * (len(parts) - 1)
    assert "".join(p.reasoning_content for p in parts) == message.reasoning_content
    assert "".join(p.content for p in parts) == message.content
    assert message_part(message, 0, 0, 10_000) == (message, -1, -1)


def test_a_final_event_keeps_its_reply_whole_when_it_fits_and_cuts_its_messages() -> None:
    reply = "x" * (2 * 1024 * 1024)
    final = agent_pb2.RunFinal(
        final_reply=reply,
        run_messages=[
            common_pb2.Message(role=common_pb2.ROLE_USER, content="q"),
            common_pb2.Message(role=common_pb2.ROLE_ASSISTANT, content=reply),
        ],
    )
    bounded = bounded_final(final)
    assert bounded.final_reply == reply
    assert not bounded.final_reply_truncated
    assert bounded.run_messages_truncated
    assert [m.content for m in bounded.run_messages] == ["q"]
    assert bounded.ByteSize() <= RESPONSE_BYTES
    huge = bounded_final(agent_pb2.RunFinal(final_reply="y" * (5 * 1024 * 1024)))
    assert huge.final_reply_truncated
    assert huge.ByteSize() <= RESPONSE_BYTES
    small = agent_pb2.RunFinal(final_reply="hi")
    assert bounded_final(small) is small
