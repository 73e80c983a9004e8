"""Tool-call ids made unique in their thread and storable before the assistant message is kept."""

from __future__ import annotations

from agentloop.v1 import common_pb2
from gateway.loop.call_ids import MAX_CALL_ID_CHARS, make_call_ids_unique, storable


def message(*ids: str) -> common_pb2.Message:
    return common_pb2.Message(
        role=common_pb2.ROLE_ASSISTANT,
        tool_calls=[common_pb2.ToolCall(id=i, name="calculator", arguments_json="{}") for i in ids],
    )


def test_good_new_ids_are_kept() -> None:
    reply = message("call_a", "call_b")
    assert make_call_ids_unique(reply, [message("call_z")]) == 0
    assert [c.id for c in reply.tool_calls] == ["call_a", "call_b"]


def test_ids_used_earlier_in_the_thread_or_the_reply_are_replaced() -> None:
    reply = message("call_0", "dup", "dup", "")
    assert make_call_ids_unique(reply, [message("call_0")]) == 3
    ids = [c.id for c in reply.tool_calls]
    assert ids[1] == "dup"
    assert len(set(ids)) == 4
    assert "call_0" not in ids
    assert all(storable(i) for i in ids)


def test_unstorable_ids_are_replaced() -> None:
    bad = ["a\x00b", "tab\there", "del\x7f", "x" * (MAX_CALL_ID_CHARS + 1)]
    reply = message(*bad, "ünïcode-ok")
    assert make_call_ids_unique(reply, []) == len(bad)
    assert reply.tool_calls[-1].id == "ünïcode-ok"
    assert all(storable(c.id) and c.id not in bad for c in reply.tool_calls)
