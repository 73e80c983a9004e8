"""The default stream mode end to end: one model call per step, tokens forwarded as the model writes.

Every step streams (gateway → Reasoner.StreamStep → scripted model over HTTP),
so the answer is never generated a second time; text that came before tool
calls is marked by a `planning_text` decision. Progress of the model is read
from the scripted server itself (requests answered, streams finished), never
from wall-clock thresholds.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest

from agentloop.scripted_model import Latency, Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2
from tests.support.counting_hooks import POST_REASONING_CALLS
from tests.support.stack import Stack, final_of, kinds, start_stack
from tests.support.tools import make_registry

pytestmark = pytest.mark.integration

FINAL_ONLY = agent_pb2.STREAM_MODE_FINAL_ONLY
ALL_STEPS = agent_pb2.STREAM_MODE_ALL_STEPS
NONE = agent_pb2.STREAM_MODE_NONE

LONG_ANSWER = " ".join(f"word{i}" for i in range(40)) + "."
PLANNING = "Let me add those first."


def _adding(step: int) -> Turn:
    return Turn(tool_calls=(ScriptedToolCall("add", {"a": step, "b": 1}),))


SCRIPT = Script(
    scenarios=(
        Scenario(
            match="three steps",
            turns=(_adding(1), _adding(2), _adding(3), Turn(content="Sum: {{last_tool}}.")),
        ),
        Scenario(
            match="think aloud",
            turns=(
                Turn(content=PLANNING, tool_calls=(ScriptedToolCall("add", {"a": 2, "b": 3}),)),
                Turn(content="It is {{tool:add}}."),
            ),
        ),
        Scenario(match="slow after a tool", turns=(_adding(1), Turn(content=LONG_ANSWER))),
        Scenario(match="slow", turns=(Turn(content=LONG_ANSWER),)),
    )
)
SLOW = Latency(first_token_ms=100, per_token_ms=30)


@pytest.fixture
async def stack() -> AsyncIterator[Stack]:
    registry, _ = make_registry()
    stack = await start_stack(
        SCRIPT,
        registry,
        gateway_overrides={
            "hook_modules": ("tests.support.counting_hooks",),
            "client_hooks": ("count_model_messages",),
        },
    )
    try:
        yield stack
    finally:
        await stack.close()


def _text_tokens(events: list[agent_pb2.RunEvent]) -> list[agent_pb2.RunEvent]:
    return [e for e in events if e.WhichOneof("event") == "llm_token" and e.llm_token.token]


def _planning_ranges(events: list[agent_pb2.RunEvent]) -> list[tuple[int, int]]:
    ranges = []
    for e in events:
        if e.WhichOneof("event") == "decision" and e.decision.kind == agent_pb2.DECISION_KIND_PLANNING_TEXT:
            match = re.search(r"llm_token events (\d+)-(\d+)", e.decision.detail)
            assert match, e.decision.detail
            ranges.append((int(match.group(1)), int(match.group(2))))
    return ranges


@pytest.mark.parametrize("mode", [FINAL_ONLY, ALL_STEPS, NONE])
async def test_k_tool_steps_take_k_plus_one_model_calls(stack: Stack, mode: int) -> None:
    events = await stack.run("three steps please", stream_mode=mode)
    final = final_of(events)
    assert final.metadata.steps_taken == 3
    assert final.final_reply == "Sum: 4."
    assert stack.model.request_count == 4  # what the model server really answered
    assert final.metadata.llm_calls == 4
    streamed = [r.get("stream", False) for r in stack.model.requests]
    assert streamed == [mode != NONE] * 4
    if mode != NONE:
        assert "".join(e.llm_token.token for e in _text_tokens(events)) == final.final_reply
    assert _planning_ranges(events) == []  # tool steps without text: nothing to mark


async def test_post_reasoning_hooks_run_once_per_model_call(stack: Stack) -> None:
    events = await stack.run("three steps please", hooks=["count_model_messages"])
    run_id = events[0].run_id
    assert final_of(events).metadata.llm_calls == 4
    assert POST_REASONING_CALLS[run_id] == stack.model.request_count == 4


async def test_first_token_reaches_the_client_while_the_model_still_writes(stack: Stack) -> None:
    stack.model.set_script(Script(scenarios=SCRIPT.scenarios, latency=SLOW))
    request = agent_pb2.RunRequest(input="slow please")
    seen: tuple[int, int, int] | None = None
    events = []
    async for response in stack.agent.Run(request, timeout=60):
        events.append(response.event)
        if (
            seen is None
            and response.event.WhichOneof("event") == "llm_token"
            and response.event.llm_token.token
        ):
            model = stack.model
            seen = (model.request_count, len(model.first_token_at), model.streams_finished)
    # The one and only call had written its first token and was still writing the answer.
    assert seen == (1, 1, 0)
    assert final_of(events).final_reply == LONG_ANSWER
    assert stack.model.request_count == 1


async def test_answer_after_a_tool_step_streams_from_its_own_call(stack: Stack) -> None:
    stack.model.set_script(Script(scenarios=SCRIPT.scenarios, latency=SLOW))
    seen: tuple[int, int] | None = None
    events = []
    async for response in stack.agent.Run(agent_pb2.RunRequest(input="slow after a tool"), timeout=60):
        events.append(response.event)
        if (
            seen is None
            and response.event.WhichOneof("event") == "llm_token"
            and response.event.llm_token.token
        ):
            seen = (stack.model.request_count, stack.model.streams_finished)
    # Second call (the answer) under way, only the tool step's stream finished.
    assert seen == (2, 1)
    assert final_of(events).metadata.llm_calls == 2


@pytest.mark.parametrize("mode", [FINAL_ONLY, ALL_STEPS])
async def test_text_before_tool_calls_is_marked_as_planning(stack: Stack, mode: int) -> None:
    events = await stack.run("think aloud", stream_mode=mode)
    final = final_of(events)
    assert final.final_reply == "It is 5."
    assert final.metadata.llm_calls == stack.model.request_count == 2

    ranges = _planning_ranges(events)
    assert len(ranges) == 1
    low, high = first = ranges[0]
    tokens = _text_tokens(events)
    planning = [e for e in tokens if low <= e.sequence <= high]
    answer = [e for e in tokens if not low <= e.sequence <= high]
    assert "".join(e.llm_token.token for e in planning) == PLANNING
    assert {e.llm_token.step for e in planning} == {0}
    assert "".join(e.llm_token.token for e in answer) == final.final_reply

    # Order: the step's text, then the mark, then its tool events.
    ks = kinds(events)
    at = next(i for i, e in enumerate(events) if e.decision.kind == agent_pb2.DECISION_KIND_PLANNING_TEXT)
    assert events[at - 1].sequence == high
    assert ks.index("tool_start") > at

    # A replay (stored, tokens joined) puts the same text inside the same range.
    watch = agent_pb2.WatchRequest(run_id=events[0].run_id)
    replayed = [r.event async for r in stack.agent.Watch(watch, timeout=30)]
    stored_planning = [e for e in _text_tokens(replayed) if low <= e.sequence <= high]
    assert "".join(e.llm_token.token for e in stored_planning) == PLANNING
    assert _planning_ranges(replayed) == [first]


async def test_nothing_streams_or_is_marked_without_streaming(stack: Stack) -> None:
    events = await stack.run("think aloud", stream_mode=NONE)
    assert "llm_token" not in kinds(events)
    assert _planning_ranges(events) == []
    assert final_of(events).metadata.llm_calls == 2
