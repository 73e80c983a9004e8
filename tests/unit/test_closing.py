"""Calls that cannot finish are closed by one module, each with an error result the model reads."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agentloop.v1 import common_pb2
from gateway.journal.closing import (
    cancelled_result,
    could_not_run,
    not_run_result,
    tool_message,
    unanswered_calls,
)

CALLS = [common_pb2.ToolCall(id="c1", name="a"), common_pb2.ToolCall(id="c2", name="b")]


def assistant(*calls: common_pb2.ToolCall) -> common_pb2.Message:
    return common_pb2.Message(role=common_pb2.ROLE_ASSISTANT, tool_calls=calls)


def tool(call_id: str) -> common_pb2.Message:
    return common_pb2.Message(role=common_pb2.ROLE_TOOL, tool_call_id=call_id)


def test_the_open_calls_are_those_of_the_last_assistant_message_no_tool_message_answers() -> None:
    user = common_pb2.Message(role=common_pb2.ROLE_USER, content="hi")
    assert unanswered_calls([user, assistant(*CALLS), tool("c2")]) == [CALLS[0]]
    assert unanswered_calls([user, assistant(*CALLS), tool("c1"), tool("c2")]) == []
    assert unanswered_calls([assistant(*CALLS), tool("c1"), tool("c2"), user]) == []
    assert unanswered_calls([]) == []


@pytest.mark.parametrize(
    ("close", "kind"),
    [
        (cancelled_result, "cancelled"),
        (not_run_result, "cancelled"),
        (lambda call: could_not_run(call, "the database broke"), "unavailable"),
    ],
)
def test_each_closing_answers_its_call_with_an_error_the_model_can_read(
    close: Callable[[common_pb2.ToolCall], common_pb2.ToolResult], kind: str
) -> None:
    result = close(CALLS[1])
    assert (result.tool_call_id, result.name, result.is_error) == ("c2", "b", True)
    message = tool_message(result)
    assert message.role == common_pb2.ROLE_TOOL
    assert message.tool_call_id == "c2"
    assert message.content.startswith(f"ERROR ({kind}): ")
