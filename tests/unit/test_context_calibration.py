"""Calibration, the summarized view and the choice of what to summarize."""

from __future__ import annotations

from agentloop.v1 import common_pb2
from gateway.loop.compression import plan, summary_message, transcript
from gateway.policies.context import Calibration, estimate_tokens, summary_range, view

S, U, A, T = common_pb2.ROLE_SYSTEM, common_pb2.ROLE_USER, common_pb2.ROLE_ASSISTANT, common_pb2.ROLE_TOOL


def msg(role: int, text: str, calls: int = 0, call_id: str = "") -> common_pb2.Message:
    return common_pb2.Message(
        role=role,  # type: ignore[arg-type]
        content=text,
        tool_call_id=call_id,
        tool_calls=[common_pb2.ToolCall(id=f"c{i}", name="t", arguments_json="{}") for i in range(calls)],
    )


def test_uncalibrated_prediction_is_the_estimate() -> None:
    assert Calibration().predict(123) == 123
    assert Calibration().estimate_for(200) == 200


def test_prediction_is_last_count_plus_scaled_growth() -> None:
    cal = Calibration(prompt_tokens=300, estimate_tokens=100)  # the model counts 3x the estimate (CJK)
    assert cal.predict(100) == 300
    assert cal.predict(110) == 330
    assert cal.estimate_for(330) == 110
    assert not cal.fits(110, 330)  # headroom
    # A model that counts less than the estimate: growth still counts at least like the estimate.
    low = Calibration(prompt_tokens=50, estimate_tokens=100)
    assert low.predict(120) == 70
    assert low.predict(80) == 40


def conversation() -> list[common_pb2.Message]:
    return [
        msg(S, "system"),
        msg(U, "first question " * 10),
        msg(A, "first answer " * 10),
        msg(U, "second question " * 10),
        msg(A, "", calls=2),
        msg(T, "r1 " * 10, call_id="c0"),
        msg(T, "r2 " * 10, call_id="c1"),
        msg(A, "second answer " * 10),
        msg(U, "third question"),
    ]


def test_plan_keeps_recent_groups_whole_and_skips_what_is_covered() -> None:
    msgs = conversation()
    keep = sum(estimate_tokens(m) for m in msgs[-2:])
    assert plan(msgs, keep) == (0, 6)  # thread indices: the tool group (3..5) is not split
    assert plan(msgs, 0) == (0, 7)  # the newest group always stays
    msgs.append(summary_message("summary", 0, 6))
    assert plan(msgs, keep) is None  # nothing new is old enough
    assert plan(msgs, 0) == (6, 7)


def test_view_replaces_the_covered_span_and_repeats_the_question() -> None:
    msgs = [*conversation(), summary_message("the story so far", 0, 6)]
    assert summary_range(msgs[-1]) == (0, 6)
    seen = view(msgs)
    assert [m.role for m in seen] == [S, U, A, U]  # the summary as a framed record, not a system rule
    assert "the story so far" in seen[1].content
    assert seen[2:] == msgs[7:9]
    covered_all = [*conversation(), summary_message("all", 0, 8)]
    assert [m.content for m in view(covered_all)][2:] == ["third question"]


def test_transcript_cuts_messages_but_never_the_earlier_summary() -> None:
    long = [msg(U, "word " * 400), msg(A, "reply " * 400)]
    text = transcript(long, 100, earlier="CODE-1 " * 30)
    assert text.startswith("Earlier summary: " + "CODE-1 " * 30)
    assert len(text) < 2000
