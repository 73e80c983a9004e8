"""Context trimming keeps the system prompt and the newest groups, never splitting a call from its result."""

from __future__ import annotations

from agentloop.v1 import common_pb2
from gateway.policies.context import estimate_tokens, trim

S, U, A, T = common_pb2.ROLE_SYSTEM, common_pb2.ROLE_USER, common_pb2.ROLE_ASSISTANT, common_pb2.ROLE_TOOL


def msg(role: int, text: str = "x" * 40, calls: int = 0, call_id: str = "") -> common_pb2.Message:
    return common_pb2.Message(
        role=role,  # type: ignore[arg-type]
        content=text,
        tool_call_id=call_id,
        tool_calls=[
            common_pb2.ToolCall(id=f"{text[:3]}{i}", name="t", arguments_json="{}") for i in range(calls)
        ],
    )


def conversation() -> list[common_pb2.Message]:
    call = msg(A, "abc", calls=2)
    return [
        msg(S, "system"),
        msg(U, "first question " * 5),
        msg(A, "first answer " * 5),
        msg(U, "second question " * 5),
        call,
        msg(T, "r1 " * 10, call_id="abc0"),
        msg(T, "r2 " * 10, call_id="abc1"),
        msg(A, "second answer"),
        msg(U, "third question"),
    ]


def test_within_budget_nothing_is_cut() -> None:
    msgs = conversation()
    assert trim(msgs, 10_000) == msgs
    assert trim(msgs, 0) == msgs


def test_cut_keeps_system_and_newest_and_never_splits_tool_groups() -> None:
    msgs = conversation()
    for budget in range(1, sum(estimate_tokens(m) for m in msgs)):
        out = trim(msgs, budget)
        assert out[0].role == S
        assert out[-1].content == "third question"
        answered = {m.tool_call_id for m in out if m.role == T}
        called = {c.id for m in out for c in m.tool_calls}
        assert answered == called, budget  # every kept call has its results and vice versa
        assert out == [msgs[0], *msgs[len(msgs) - (len(out) - 1) :]]  # a suffix of the conversation


def test_tight_budget_keeps_the_current_question() -> None:
    out = trim(conversation(), 1)
    assert [m.content for m in out] == ["system", "third question"]


def test_budget_fits_exactly_the_tool_group() -> None:
    msgs = conversation()
    tail = msgs[4:]
    budget = sum(estimate_tokens(m) for m in [msgs[0], *tail])
    assert trim(msgs, budget) == [msgs[0], *tail]
    assert trim(msgs, budget - 1) == [msgs[0], *msgs[7:]]


def test_a_summary_note_is_kept_like_the_system_prompt() -> None:
    """The note of a summarized view stands for everything older: newer messages are cut first."""
    note = msg(U, "[Summary of the earlier conversation] " + "fact " * 40)
    msgs = [msg(S, "system"), note, *conversation()[1:]]
    budget = estimate_tokens(msgs[0]) + estimate_tokens(note) + estimate_tokens(msgs[-1])
    kept = trim(msgs, budget, keep_first=1)
    assert kept == [msgs[0], note, msgs[-1]]
    assert note not in trim(msgs, budget)  # without it, the oldest message goes first
