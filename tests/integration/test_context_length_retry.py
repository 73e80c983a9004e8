"""A model that refuses the prompt as longer than its context window, through the real services.

The gateway's estimate says the prompt fits (the budget is large), but the model's window is
smaller: its 400 ``context_length_exceeded`` (the Reasoner's CONTEXT_LENGTH_EXCEEDED) is answered
by ONE summary of the older messages and ONE retry of the step; with compression off, or when
the retry is refused too, the run ends with an error naming the context window.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentloop.scripted_model import Fault, Recording, Scenario, Script, Turn
from agentloop.testing import final_of, kinds, running_stack
from agentloop.v1 import agent_pb2, common_pb2
from gateway.loop.compression import TRANSCRIPT_HEADER
from gateway.policies.context import summary_range
from tests.support.recordings import DIRECTORY

pytestmark = pytest.mark.integration

FACT = "SECRET-4711"
TOO_LONG = Recording.from_file(DIRECTORY / "openai-400-context-length.http")
"""OpenAI's real 400 for a prompt over the model's context length."""
SCRIPT = Script(
    scenarios=(
        Scenario(
            match=TRANSCRIPT_HEADER, turns=(Turn(content="The user's code is {{match:SECRET-[0-9]+}}."),)
        ),
        Scenario(match="^never fits$", turns=(Turn(replay=TOO_LONG),)),
        Scenario(match="", turns=(Turn(content="Your code is {{match:SECRET-[0-9]+}}."),)),
    )
)
OPTIONS: dict[str, Any] = {"context_keep_recent_tokens": 40, "disable_memory": True}


def _history() -> list[common_pb2.Message]:
    """Older turns, the fact in the first: what a summary must carry."""
    history = [common_pb2.Message(role=common_pb2.ROLE_USER, content=f"my code is {FACT}, keep it")]
    for turn in range(6):
        history.append(common_pb2.Message(role=common_pb2.ROLE_ASSISTANT, content=f"Noted, turn {turn}."))
        filler = " ".join(f"w{turn}x{i}" for i in range(40))
        history.append(common_pb2.Message(role=common_pb2.ROLE_USER, content=f"filler {filler}"))
    history.append(common_pb2.Message(role=common_pb2.ROLE_ASSISTANT, content="Go on."))
    return history


def _decisions(events: list[agent_pb2.RunEvent], kind: int) -> list[str]:
    return [
        e.decision.detail for e in events if e.WhichOneof("event") == "decision" and e.decision.kind == kind
    ]


async def _run(stack: Any, text: str, **options: Any) -> list[agent_pb2.RunEvent]:
    request = agent_pb2.RunRequest(
        input=text, history=_history(), options=agent_pb2.RunOptions(**{**OPTIONS, **options})
    )
    return [response.event async for response in stack.agent.Run(request, timeout=60)]


def _is_summary(body: dict[str, Any]) -> bool:
    return any(TRANSCRIPT_HEADER in str(m.get("content")) for m in body["messages"])


async def test_one_summary_and_one_retry_answer_a_context_length_refusal(database_url: str) -> None:
    refusal = Fault("status", status=400, message="This model's maximum context length is 512 tokens.")
    script = Script(scenarios=SCRIPT.scenarios, faults=(refusal,))
    async with running_stack(script, database_url=database_url) as stack:
        events = await _run(stack, "what is my code?")
        final = final_of(events)
        assert final.final_reply == f"Your code is {FACT}."
        refused = _decisions(events, agent_pb2.DECISION_KIND_CONTEXT_LENGTH_EXCEEDED)
        assert len(refused) == 1
        assert "maximum context length is 512 tokens" in refused[0]
        assert len(_decisions(events, agent_pb2.DECISION_KIND_CONTEXT_COMPRESSED)) == 1
        # Three requests: the refused step, the summary, the retry; the retry is shorter.
        requests = stack.model.requests
        assert [_is_summary(r) for r in requests] == [False, True, False]
        assert len(requests[2]["messages"]) < len(requests[0]["messages"])
        retried = json.dumps(requests[2]["messages"])
        assert f"The user's code is {FACT}." in retried  # the summary stands in for the older turns
        assert "w0x0" in json.dumps(requests[0]["messages"])
        assert "w0x0" not in retried
        assert final.metadata.llm_calls == 2  # the summary and the retry answered
        # The summary is kept in the thread, in both stores, before the answer.
        view = await stack.agent.GetThread(
            agent_pb2.GetThreadRequest(thread_id=events[0].thread_id), timeout=10
        )
        summaries = [m for m in view.messages if summary_range(m) is not None]
        assert len(summaries) == 1
        assert FACT in summaries[0].content
        assert view.messages[-1].content == final.final_reply


async def test_a_refusal_after_the_summary_ends_the_run_naming_the_context_window() -> None:
    async with running_stack(SCRIPT) as stack:
        events = await _run(stack, "never fits")
        assert kinds(events)[-1] == "error"
        error = events[-1].error
        assert error.code == 3  # INVALID_ARGUMENT
        window = "the conversation does not fit the model's context window"
        assert error.message.startswith(f"{window} even after older messages were summarized")
        assert "maximum context length" in error.message
        assert [_is_summary(r) for r in stack.model.requests] == [
            False,
            True,
            False,
        ]  # one summary, one retry


async def test_with_compression_off_the_refusal_ends_the_run_at_once() -> None:
    async with running_stack(SCRIPT, gateway_overrides={"context_budget_tokens": 0}) as stack:
        events = await _run(stack, "never fits", context_keep_recent_tokens=0)
        assert kinds(events)[-1] == "error"
        message = events[-1].error.message
        assert message.startswith(
            "the conversation does not fit the model's context window and context compression is off"
        )
        assert "maximum context length" in message
        assert stack.model.request_count == 1
        assert not _decisions(events, agent_pb2.DECISION_KIND_CONTEXT_LENGTH_EXCEEDED)


async def test_a_refusal_with_nothing_older_to_summarize_ends_the_run() -> None:
    async with running_stack(SCRIPT) as stack:
        request = agent_pb2.RunRequest(input="never fits", options=agent_pb2.RunOptions(**OPTIONS))
        events = [response.event async for response in stack.agent.Run(request, timeout=60)]
        assert kinds(events)[-1] == "error"
        assert "and no older messages to summarize" in events[-1].error.message
        assert stack.model.request_count == 1
