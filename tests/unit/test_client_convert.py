"""The client's one conversion module covers the whole wire contract it reads."""

from __future__ import annotations

import pytest

from agentloop.client import _convert
from agentloop.client import events as ev
from agentloop.kernel.wellknown import struct_to_dict
from agentloop.v1 import agent_pb2, common_pb2

EXPECTED = {
    "node_start": ev.NodeStarted,
    "node_end": ev.NodeFinished,
    "llm_token": ev.Token,
    "tool_start": ev.ToolStarted,
    "tool_end": ev.ToolFinished,
    "final": ev.Final,
    "error": ev.Error,
    "interrupt": ev.Interrupt,
    "decision": ev.Decision,
}


def test_every_kind_of_run_event_becomes_a_typed_event() -> None:
    kinds = [f.name for f in agent_pb2.RunEvent.DESCRIPTOR.oneofs_by_name["event"].fields]
    assert sorted(kinds) == sorted(EXPECTED)  # a new kind on the wire needs a client event
    for kind in kinds:
        wire = agent_pb2.RunEvent(run_id="r", thread_id="t", sequence=7)
        getattr(wire, kind).SetInParent()
        event = _convert.event(agent_pb2.RunResponse(event=wire))
        assert type(event) is EXPECTED[kind]
        assert (event.run_id, event.thread_id, event.sequence) == ("r", "t", 7)


def test_tool_events_and_pauses_carry_ids_names_and_arguments() -> None:
    result = common_pb2.ToolResult(
        tool_call_id="c1",
        name="add",
        content="boom",
        is_error=True,
        error_kind=common_pb2.TOOL_ERROR_KIND_TIMEOUT,
    )
    wire = agent_pb2.RunEvent(tool_end=agent_pb2.ToolEnd(name="add", tool_call_id="c1", result=result))
    finished = _convert.event(agent_pb2.RunResponse(event=wire))
    assert finished == ev.ToolFinished("", "", 0, "c1", "add", "boom", True, "TIMEOUT", 0.0)
    call = common_pb2.ToolCall(id="c2", name="book", arguments_json='{"at": "19:30"}')
    paused = _convert.event(
        agent_pb2.RunResponse(event=agent_pb2.RunEvent(interrupt=agent_pb2.Interrupt(pending=[call])))
    )
    assert isinstance(paused, ev.Interrupt)
    assert paused.pending[0].arguments == {"at": "19:30"}


def test_decisions_become_the_wire_verdicts() -> None:
    request = _convert.resume_request(
        "r", "u", [ev.approve("a"), ev.reject("b", "no"), ev.edit("c", {"x": 1})], "req"
    )
    verdicts = [(d.tool_call_id, d.verdict, d.reason, d.arguments_json) for d in request.decisions]
    assert verdicts == [
        ("a", agent_pb2.ApprovalDecision.VERDICT_APPROVE, "", ""),
        ("b", agent_pb2.ApprovalDecision.VERDICT_REJECT, "no", ""),
        ("c", agent_pb2.ApprovalDecision.VERDICT_EDIT, "", '{"x": 1}'),
    ]


def test_run_options_take_named_fields_and_refuse_an_unknown_stream_mode() -> None:
    options = _convert.run_options(
        system="s", model="m", max_steps=3, output_schema={"type": "object"}, extra={"serial_tools": True}
    )
    assert (options.system_prompt, options.model, options.max_steps, options.serial_tools) == (
        "s",
        "m",
        3,
        True,
    )
    assert struct_to_dict(options.output_schema) == {"type": "object"}
    with pytest.raises(ValueError, match=r"^stream: "):
        _convert.run_options(stream="sometimes")


def test_the_final_event_says_which_models_answered() -> None:
    wire = agent_pb2.RunEvent(run_id="r", thread_id="t", sequence=9)
    wire.final.metadata.models.extend(["primary", "backup"])
    event = _convert.event(agent_pb2.RunResponse(event=wire))
    assert isinstance(event, ev.Final)
    assert event.models == ("primary", "backup")
