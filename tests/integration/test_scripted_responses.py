"""The scripted model's ``/v1/responses`` over real HTTP, and the Reasoner's Responses protocol against it.

The official ``openai`` client parses the scripted events into its own typed event classes, so
the stream is the one OpenAI sends; faults on the Responses endpoint cost the same request budget
and map to the same errors as on chat completions.
"""

from __future__ import annotations

from typing import Any

import openai
import pytest
from google.rpc import code_pb2
from openai import AsyncOpenAI

from agentloop.scripted_model import Fault, Scenario, Script, ScriptedModelServer, ScriptedToolCall, Turn
from agentloop.testing import final_of, kinds, running_stack
from agentloop.v1 import agent_pb2

pytestmark = pytest.mark.integration

TOOLS: list[Any] = [
    {"type": "function", "name": name, "parameters": {"type": "object", "properties": {}}, "strict": False}
    for name in ("calculator", "current_time")
]
SCRIPT = Script(
    scenarios=(
        Scenario(
            match="",
            turns=(
                Turn(
                    reasoning="Both at once.",
                    tool_calls=(
                        ScriptedToolCall("calculator", {"expression": "6 * 7"}),
                        ScriptedToolCall("current_time", {}),
                    ),
                ),
                Turn(content="It is {{tool:calculator}}."),
            ),
        ),
    )
)


async def test_the_openai_client_parses_the_stream_into_its_typed_events() -> None:
    async with ScriptedModelServer(SCRIPT) as model:
        client = AsyncOpenAI(base_url=model.base_url, api_key="k", max_retries=0)
        stream = await client.responses.create(
            model="scripted",
            input="Compute",
            tools=TOOLS,
            stream=True,
            store=False,
            include=["reasoning.encrypted_content"],
        )
        events = [event async for event in stream]
        types = [event.type for event in events]
        assert types[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
        assert types[-1] == "response.completed"
        summary = "".join(e.delta for e in events if e.type == "response.reasoning_summary_text.delta")
        assert summary == "Both at once."
        completed = events[-1].response
        assert [item.type for item in completed.output] == ["reasoning", "function_call", "function_call"]
        calls = [item for item in completed.output if item.type == "function_call"]
        assert [(c.name, c.arguments) for c in calls] == [
            ("calculator", '{"expression": "6 * 7"}'),
            ("current_time", "{}"),
        ]
        reasoning = completed.output[0]
        assert reasoning.encrypted_content
        assert completed.usage is not None
        assert completed.usage.output_tokens_details.reasoning_tokens == 3

        # The follow-up with the turn sent back whole is answered; the client's own parse of it too.
        follow_up = [
            {"role": "user", "content": "Compute"},
            *(item.model_dump(exclude_none=True) for item in completed.output),
            *({"type": "function_call_output", "call_id": c.call_id, "output": "42"} for c in calls),
        ]
        answer = await client.responses.create(
            model="scripted",
            input=follow_up,
            tools=TOOLS,
            store=False,
            include=["reasoning.encrypted_content"],
        )
        assert answer.output_text == "It is 42."

        # Without the reasoning item, or with its content changed, it is refused as OpenAI refuses it.
        without = [item for item in follow_up if item.get("type") != "reasoning"]
        with pytest.raises(openai.BadRequestError, match="without its required 'reasoning' item"):
            await client.responses.create(model="scripted", input=without, tools=TOOLS, store=False)
        tampered = [
            {**item, "encrypted_content": "forged"} if item.get("type") == "reasoning" else item
            for item in follow_up
        ]
        with pytest.raises(openai.BadRequestError, match="could not be verified"):
            await client.responses.create(model="scripted", input=tampered, tools=TOOLS, store=False)


async def test_a_request_without_input_is_refused_naming_the_parameter() -> None:
    async with ScriptedModelServer(SCRIPT) as model:
        client = AsyncOpenAI(base_url=model.base_url, api_key="k", max_retries=0)
        with pytest.raises(openai.BadRequestError) as info:
            await client.responses.create(model="scripted", input=[])
        assert info.value.param == "input"


def _stack_on_responses(script: Script, **reasoner: Any) -> Any:
    return running_stack(script, reasoner_overrides={"protocol": "responses", **reasoner})


@pytest.mark.parametrize(
    ("fault", "requests", "code"),
    [
        (Fault("status", status=500, times=5), 3, code_pb2.UNAVAILABLE),
        (Fault("status", status=429, times=5), 3, code_pb2.RESOURCE_EXHAUSTED),
        (Fault("stream_error", status=500, times=5), 3, code_pb2.UNAVAILABLE),
        (Fault("stream_error", status=400, times=5), 1, code_pb2.INVALID_ARGUMENT),
        (Fault("malformed_json", times=5), 3, code_pb2.UNAVAILABLE),
        (Fault("status", status=401, times=5), 1, code_pb2.FAILED_PRECONDITION),
    ],
    ids=lambda value: getattr(value, "kind", None) and f"{value.kind}-{value.status}",
)
async def test_responses_faults_cost_the_same_budget_and_map_to_the_same_errors(
    fault: Fault, requests: int, code: int
) -> None:
    script = Script(scenarios=SCRIPT.scenarios, faults=(fault,))
    async with _stack_on_responses(script, max_retries=2) as stack:
        events = await stack.run("Compute", stream_mode=agent_pb2.STREAM_MODE_FINAL_ONLY)
        assert kinds(events)[-1] == "error"
        assert events[-1].error.code == code
        assert stack.model.request_count == requests


async def test_a_fault_that_passes_is_retried_within_the_step() -> None:
    script = Script(scenarios=SCRIPT.scenarios, faults=(Fault("stream_error", status=503, times=2),))
    async with _stack_on_responses(script, max_retries=2) as stack:
        events = await stack.run("Compute")
        assert final_of(events).final_reply == "It is 42."
        assert stack.model.request_count == 4  # two failed, then the two steps of the run
