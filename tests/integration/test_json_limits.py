"""Deeply nested JSON from a client or a model is refused with a clear error, never a RecursionError."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import grpc
import pytest

from agentloop.kernel.wellknown import struct_to_dict
from agentloop.scripted_model import Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2, common_pb2, tools_pb2
from tests.support.stack import Stack, final_of, kinds, start_stack
from tests.support.tools import make_registry

pytestmark = pytest.mark.integration

DEEP = "[" * 2000 + "]" * 2000  # under 64 KiB, far deeper than Python's recursion limit
SCRIPT = Script(
    scenarios=(
        Scenario(
            match="add please",
            turns=(Turn(tool_calls=(ScriptedToolCall("add", {"a": 1, "b": 2}),)), Turn(content="Done.")),
        ),
    )
)


@pytest.fixture
async def stack() -> AsyncIterator[Stack]:
    stack = await start_stack(SCRIPT, make_registry()[0])
    try:
        yield stack
    finally:
        await stack.close()


async def test_deep_tool_arguments_become_an_error_result(stack: Stack) -> None:
    arguments = json.dumps({"a": 1, "b": 2, "extra": json.loads("[" * 100 + "]" * 100)})
    for text in (DEEP, '{"a": ' + DEEP + "}", arguments):
        request = tools_pb2.ExecuteRequest(
            calls=[common_pb2.ToolCall(id="c1", name="add", arguments_json=text)]
        )
        events = [e async for e in stack.tools_stub.Execute(request, timeout=10)]
        result = events[-1].finished
        assert result.is_error
        assert result.error_kind == common_pb2.TOOL_ERROR_KIND_MALFORMED_ARGUMENTS
        assert result.content.startswith("arguments: nests more than 64 levels deep"), result.content


async def test_deep_edit_arguments_are_invalid_argument_and_the_run_stays_paused(stack: Stack) -> None:
    events = await stack.run("add please", thread_id="t-deep", user_id="ana", require_approval=["add"])
    interrupt = next(e for e in events if e.WhichOneof("event") == "interrupt")
    call = interrupt.interrupt.pending[0]
    edit = agent_pb2.ApprovalDecision(
        tool_call_id=call.id,
        verdict=agent_pb2.ApprovalDecision.VERDICT_EDIT,
        arguments_json='{"a": ' + DEEP + "}",
    )
    request = agent_pb2.ResumeRequest(run_id=interrupt.run_id, user_id="ana", decisions=[edit])
    with pytest.raises(grpc.aio.AioRpcError) as info:
        [r async for r in stack.agent.Resume(request, timeout=30)]
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (info.value.details() or "").startswith("decisions[0].arguments_json: nests more than")

    # The refused decision changed nothing: a sane edit still finishes the run.
    edit.arguments_json = '{"a": 20, "b": 22}'
    request = agent_pb2.ResumeRequest(run_id=interrupt.run_id, user_id="ana", decisions=[edit])
    events = [r.event async for r in stack.agent.Resume(request, timeout=30)]
    assert "final" in kinds(events)
    ends = [e.tool_end.result for e in events if e.WhichOneof("event") == "tool_end"]
    assert [r.content for r in ends] == ["42"]
    assert final_of(events).final_reply == "Done."


async def test_a_model_sending_deep_arguments_gets_an_error_result_and_the_run_completes() -> None:
    script = Script(
        scenarios=(
            Scenario(
                match="deep args",
                turns=(
                    Turn(tool_calls=(ScriptedToolCall("add", '{"a": ' + DEEP + ', "b": 1}'),)),
                    Turn(content="Saw: {{last_tool}}"),
                ),
            ),
        )
    )
    stack = await start_stack(script, make_registry()[0])
    try:
        events = await stack.run("deep args")
        final = final_of(events)
        (result,) = [e.tool_end.result for e in events if e.WhichOneof("event") == "tool_end"]
        assert result.is_error
        assert result.error_kind == common_pb2.TOOL_ERROR_KIND_MALFORMED_ARGUMENTS
        assert "nests more than 64 levels deep" in final.final_reply
    finally:
        await stack.close()


async def test_a_structured_answer_too_deep_for_a_struct_is_sent_back_to_the_model() -> None:
    """An answer of 40 JSON levels would make a RunFinal no client decodes: the model is asked again."""
    deep: dict[str, object] = {"leaf": 1}
    for _ in range(39):
        deep = {"x": deep}
    script = Script(
        scenarios=(
            Scenario(
                match="deep answer",
                turns=(
                    Turn(tool_calls=(ScriptedToolCall("final_answer", deep),)),
                    Turn(tool_calls=(ScriptedToolCall("final_answer", {"x": {"leaf": 1}}),)),
                    Turn(content="Here it is."),
                ),
            ),
        )
    )
    stack = await start_stack(script, make_registry()[0])
    try:
        request = agent_pb2.RunRequest(input="deep answer")
        request.options.output_schema.update({"type": "object"})
        events = [r.event async for r in stack.agent.Run(request, timeout=30)]
        final = final_of(events)
        (refused, accepted) = [e.tool_end.result for e in events if e.WhichOneof("event") == "tool_end"]
        assert refused.is_error
        assert "nests more than 30 levels deep" in refused.content
        assert not accepted.is_error
        assert struct_to_dict(final.structured_output) == {"x": {"leaf": 1}}
    finally:
        await stack.close()
