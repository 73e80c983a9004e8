"""Tool calls that cannot finish, closed: the one place that writes their error results.

Every provider refuses a conversation in which an assistant message asked for tools that no
tool message answers. So whatever stops a call from finishing, the thread gets an error result
for it, in call order, and the model of the next step or run reads why (and may call it again):

- `refused`: it must not run (the per-step limits, arguments too large or malformed, a person's
  rejection): `error_result` with the kind that says why;
- `cancelled_result`: the run was cancelled before it finished;
- `not_run_result`: the thread was forked at a checkpoint where it had not finished;
- `could_not_run`: a fault nobody classified ended the run.

`unanswered_calls` finds the calls left open at the end of a conversation, and `tool_message`
is the tool message the model reads for a result (errors marked so that it can tell).
"""

from __future__ import annotations

from agentloop.v1 import common_pb2

CANCELLED_RESULT = "The run was cancelled before this tool call finished."
NOT_RUN_RESULT = "Not run: the thread was forked before this tool call finished."


def tool_message(result: common_pb2.ToolResult) -> common_pb2.Message:
    """The tool message the model reads; errors are prefixed so the model can tell and recover."""
    content = result.content
    if result.is_error:
        kind = common_pb2.ToolErrorKind.Name(result.error_kind).removeprefix("TOOL_ERROR_KIND_").lower()
        content = f"ERROR ({kind}): {content}"
    return common_pb2.Message(
        role=common_pb2.ROLE_TOOL, content=content, tool_call_id=result.tool_call_id, name=result.name
    )


def error_result(
    call: common_pb2.ToolCall, kind: common_pb2.ToolErrorKind.ValueType, content: str
) -> common_pb2.ToolResult:
    """The error result that answers `call` without running it (or after it failed)."""
    return common_pb2.ToolResult(
        tool_call_id=call.id, name=call.name, content=content, is_error=True, error_kind=kind
    )


def cancelled_result(call: common_pb2.ToolCall) -> common_pb2.ToolResult:
    """The result a call gets when the run is cancelled before it finished."""
    return error_result(call, common_pb2.TOOL_ERROR_KIND_CANCELLED, CANCELLED_RESULT)


def not_run_result(call: common_pb2.ToolCall) -> common_pb2.ToolResult:
    """The result that closes, in a fork, a call that had not finished at the fork's checkpoint."""
    return error_result(call, common_pb2.TOOL_ERROR_KIND_CANCELLED, NOT_RUN_RESULT)


def could_not_run(call: common_pb2.ToolCall, message: str) -> common_pb2.ToolResult:
    """The result of a call left open by a fault that ended the run."""
    return error_result(
        call, common_pb2.TOOL_ERROR_KIND_UNAVAILABLE, f"The tool call could not run: {message}"
    )


def unanswered_calls(history: list[common_pb2.Message]) -> list[common_pb2.ToolCall]:
    """Tool calls of the conversation's last assistant message that no tool message answers."""
    answered: set[str] = set()
    for message in reversed(history):
        if message.role == common_pb2.ROLE_TOOL:
            answered.add(message.tool_call_id)
            continue
        if message.role == common_pb2.ROLE_ASSISTANT:
            return [c for c in message.tool_calls if c.id not in answered]
        return []
    return []
