"""Exits of a run with an output schema, and session memory, through the real services.

A model that answers in plain text is told so and asked again; the run never
ends "completed" without a validated answer. A validated answer that came
without any text gets one more call for the reply text. Session memory (opt-in)
stores what a run learned as a long-term memory that later runs recall.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence

import pytest

from agentloop.kernel.wellknown import dict_to_struct, struct_to_dict
from agentloop.scripted_model import Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2
from gateway.loop.compression import SESSION_HEADER
from tests.support.stack import Stack, final_of, start_stack

pytestmark = pytest.mark.integration

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}},
    "required": ["answer"],
    "additionalProperties": False,
}
FINISH = ScriptedToolCall("final_answer", {"answer": 42})
SCRIPT = Script(
    scenarios=(
        Scenario(match=SESSION_HEADER, turns=(Turn(content="The user {{match:likes [a-z]+}}."),)),
        Scenario(match="^only prose$", turns=(Turn(content="It is forty-two."),)),
        Scenario(
            match="^prose first$",
            turns=(
                Turn(content="It is forty-two."),
                Turn(tool_calls=(FINISH,)),
                Turn(content="The answer is 42."),
            ),
        ),
    )
)


@pytest.fixture
async def stack() -> AsyncIterator[Stack]:
    started = await start_stack(SCRIPT)
    try:
        yield started
    finally:
        await started.close()


def decisions(events: Sequence[agent_pb2.RunEvent], kind: str) -> list[str]:
    made = [e.decision for e in events if e.WhichOneof("event") == "decision"]
    return [d.detail for d in made if d.kind == agent_pb2.DecisionKind.Value(f"DECISION_KIND_{kind.upper()}")]


async def test_plain_text_answers_never_end_completed(stack: Stack) -> None:
    events = await stack.run("only prose", max_steps=3, output_schema=dict_to_struct(SCHEMA))
    final = final_of(events)
    assert final.metadata.stop_reason == agent_pb2.STOP_REASON_STRUCTURED_OUTPUT_MISSING
    assert not final.HasField("structured_output")
    assert "required format" in final.final_reply
    assert len(decisions(events, "structured_output_missing")) == 3
    assert final.metadata.llm_calls == 4  # three answers told to use final_answer, one forced at the limit
    told = [m["content"] for m in stack.model.requests[1]["messages"] if m["role"] == "system"]
    assert any("final_answer" in text for text in told)
    assert all(r["tool_choice"] == "required" for r in stack.model.requests[:3])
    forced = {"type": "function", "function": {"name": "final_answer"}}
    assert stack.model.requests[3]["tool_choice"] == forced


async def test_plain_text_then_final_answer_then_reply_text(stack: Stack) -> None:
    events = await stack.run("prose first", max_steps=5, output_schema=dict_to_struct(SCHEMA))
    final = final_of(events)
    assert final.metadata.stop_reason == agent_pb2.STOP_REASON_COMPLETED
    assert struct_to_dict(final.structured_output) == {"answer": 42}
    # The validated answer came without text: one more call, tools off, wrote the reply.
    assert final.final_reply == "The answer is 42."
    assert stack.model.requests[-1]["tool_choice"] == "none"
    assert len(stack.model.requests) == 3
    told = decisions(events, "structured_output_missing")
    assert told == ["plain-text answer; final_answer asked for again"]


async def test_session_memory_is_stored_recalled_listed_and_deleted(stack: Stack) -> None:
    events = await stack.run("I think ana likes tea", user_id="ana", session_memory=True)
    assert decisions(events, "memory_stored") == ["session: The user likes tea."]
    listed = await stack.agent.ListMemories(agent_pb2.ListMemoriesRequest(user_id="ana"))
    assert [m.text for m in listed.memories] == ["The user likes tea."]

    later = await stack.run("what should I drink?", user_id="ana")
    assert decisions(later, "memory_recalled") == ["The user likes tea."]
    prompt = [m["content"] for m in stack.model.requests[-1]["messages"] if m["role"] == "system"]
    assert any("The user likes tea." in text for text in prompt)

    await stack.agent.DeleteMemory(
        agent_pb2.DeleteMemoryRequest(user_id="ana", memory_id=listed.memories[0].memory_id)
    )
    assert not decisions(await stack.run("what should I drink?", user_id="ana"), "memory_recalled")


async def test_session_memory_is_opt_in(stack: Stack) -> None:
    await stack.run("I think bo likes coffee", user_id="bo")
    await stack.run("I think bo likes juice", user_id="bo", session_memory=True, disable_memory=True)
    assert not (await stack.agent.ListMemories(agent_pb2.ListMemoriesRequest(user_id="bo"))).memories
    assert not any(SESSION_HEADER in json.dumps(r) for r in stack.model.requests)
