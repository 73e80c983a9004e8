"""The loop end to end: gateway → Reasoner → scripted model (HTTP), gateway → ToolService, all over gRPC."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import grpc
import pytest

from agentloop.kernel.wellknown import duration
from agentloop.scripted_model import Latency, Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2, common_pb2
from tests.support.stack import Stack, assert_numbered, final_of, kinds
from tests.support.tools import Probe, probed_stack

pytestmark = pytest.mark.integration

MULTI_STEP = Scenario(
    match="multi",
    turns=(
        Turn(
            reasoning="Both at once.",
            tool_calls=(ScriptedToolCall("meet", {"party": "a"}), ScriptedToolCall("meet", {"party": "b"})),
        ),
        Turn(tool_calls=(ScriptedToolCall("calculator", {"expression": "1234 * 5678"}),)),
        Turn(content="Both met ({{tool:meet}}) and the product is {{tool:calculator}}."),
    ),
)
LOOPING = Scenario(
    match="forever",
    turns=(Turn(tool_calls=(ScriptedToolCall("add", {"a": 1, "b": 2}),)),),
    final_text="Out of steps; 1 + 2 = {{tool:add}}.",
)


def scenario(match: str, *calls: ScriptedToolCall, answer: str = "Saw: {{last_tool}}") -> Scenario:
    return Scenario(match=match, turns=(Turn(tool_calls=calls), Turn(content=answer)))


SCRIPT = Script(
    scenarios=(
        MULTI_STEP,
        LOOPING,
        scenario("unknown", ScriptedToolCall("no_such_tool", {})),
        scenario("malformed", ScriptedToolCall("add", '{"a": 1, "b": ')),
        scenario("invalid", ScriptedToolCall("add", {"a": "one", "b": 2})),
        scenario("slow", ScriptedToolCall("sleep_for", {"seconds": 5})),
        scenario("boom", ScriptedToolCall("explode", {"reason": "kaboom"})),
        Scenario(match="", turns=(Turn(content="Hello there, friend.", reasoning="Greeting."),)),
    )
)


@pytest.fixture
async def stack_and_probe() -> AsyncIterator[tuple[Stack, Probe]]:
    async with probed_stack(SCRIPT) as stack_and_probe:
        yield stack_and_probe


@pytest.fixture
def stack(stack_and_probe: tuple[Stack, Probe]) -> Stack:
    return stack_and_probe[0]


def tool_ends(events: list[agent_pb2.RunEvent]) -> list[common_pb2.ToolResult]:
    return [e.tool_end.result for e in events if e.WhichOneof("event") == "tool_end"]


async def test_multi_step_run_with_parallel_tool_calls(stack_and_probe: tuple[Stack, Probe]) -> None:
    stack, probe = stack_and_probe
    events = await stack.run("multi step please")
    final = final_of(events)

    # meet() only returns when both calls run at once: the batch really was parallel.
    results = tool_ends(events)
    assert [r.content for r in results if r.name == "meet"] != []
    assert sorted(r.content for r in results if r.name == "meet") == ["a met", "b met"]
    assert not any(r.is_error for r in results)
    assert probe.calls["meet"] == 2

    assert "7006652" in final.final_reply
    md = final.metadata
    assert (md.steps_taken, md.stop_reason, md.tool_calls) == (2, agent_pb2.STOP_REASON_COMPLETED, 3)
    assert list(md.tools_used) == ["meet", "calculator"]
    assert md.llm_calls == 3  # one call per step, the answering one included: nothing generated twice
    assert md.usage.total_tokens > 0

    # Events: gap-free sequence, one run/thread id, nodes in graph order.
    assert_numbered(events)
    assert len({e.run_id for e in events}) == 1
    assert events[0].run_id
    nodes = [e.node_start.node for e in events if e.WhichOneof("event") == "node_start"]
    assert nodes == ["init_state", "memory_trigger", "agent", "tools", "agent", "tools", "agent", "finalize"]
    ks = kinds(events)
    first_end = ks.index("tool_end")
    assert ks[:first_end].count("tool_start") == 2  # both started before either finished

    # Every step streams; the planning steps wrote no text, so the text tokens are the reply.
    tokens = [e.llm_token for e in events if e.WhichOneof("event") == "llm_token"]
    assert "".join(t.token for t in tokens) == final.final_reply
    assert {t.step for t in tokens if t.token} == {2}
    assert "".join(t.reasoning_token for t in tokens if t.step == 0) == "Both at once."
    assert "decision" not in kinds(events)  # no text came before tool calls: nothing to mark

    # The transcript: every tool call has exactly one result, in call order.
    msgs = list(final.run_messages)
    assert msgs[0].role == common_pb2.ROLE_USER
    call_ids = [c.id for m in msgs for c in m.tool_calls]
    result_ids = [m.tool_call_id for m in msgs if m.role == common_pb2.ROLE_TOOL]
    assert call_ids == result_ids
    assert len(call_ids) == 3
    assert msgs[-1].role == common_pb2.ROLE_ASSISTANT
    assert msgs[-1].content == final.final_reply


async def test_tool_results_accumulate_into_the_model_context(stack: Stack) -> None:
    await stack.run("multi step please")
    # The last planning request carries all three tool results from both rounds.
    planning = [r for r in stack.model.requests if r.get("tool_choice") != "none"]
    tool_msgs = [m for m in planning[-1]["messages"] if m["role"] == "tool"]
    assert sorted(m["content"] for m in tool_msgs) == ["7006652", "a met", "b met"]


async def test_step_limit_answers_without_tools(stack: Stack) -> None:
    events = await stack.run(
        "loop forever", max_steps=3, loop_detection=agent_pb2.LoopDetection(disabled=True)
    )
    final = final_of(events)
    assert final.metadata.stop_reason == agent_pb2.STOP_REASON_MAX_STEPS
    assert final.metadata.steps_taken == 3
    assert final.metadata.llm_calls == 4
    assert final.final_reply == "Out of steps; 1 + 2 = 3."
    last_request = stack.model.requests[-1]
    assert last_request["tool_choice"] == "none"
    assert last_request.get("stream") is True


async def test_unknown_tool_becomes_an_error_result_the_model_sees(stack: Stack) -> None:
    events = await stack.run("call an unknown tool")
    (result,) = tool_ends(events)
    assert result.is_error
    assert result.error_kind == common_pb2.TOOL_ERROR_KIND_UNKNOWN_TOOL
    assert "calculator" in result.content  # lists what exists
    final = final_of(events)
    assert final.metadata.stop_reason == agent_pb2.STOP_REASON_COMPLETED
    assert final.final_reply.startswith("Saw: ERROR (unknown_tool)")


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("malformed args", common_pb2.TOOL_ERROR_KIND_MALFORMED_ARGUMENTS),
        ("invalid args", common_pb2.TOOL_ERROR_KIND_INVALID_ARGUMENTS),
        ("boom", common_pb2.TOOL_ERROR_KIND_EXCEPTION),
    ],
)
async def test_bad_tool_calls_never_crash_the_run(stack: Stack, text: str, kind: int) -> None:
    events = await stack.run(text)
    (result,) = tool_ends(events)
    assert result.is_error
    assert result.error_kind == kind, result
    final = final_of(events)
    assert final.metadata.stop_reason == agent_pb2.STOP_REASON_COMPLETED
    tool_msgs = [m for m in stack.model.requests[-1]["messages"] if m["role"] == "tool"]
    assert tool_msgs[0]["content"].startswith("ERROR")


async def test_exception_message_reaches_the_model(stack: Stack) -> None:
    events = await stack.run("boom")
    assert "kaboom" in tool_ends(events)[0].content


async def test_tool_timeout_is_an_error_result(stack_and_probe: tuple[Stack, Probe]) -> None:
    stack, probe = stack_and_probe
    events = await stack.run("slow tool", tool_timeout=duration(0.2))
    (result,) = tool_ends(events)
    assert result.error_kind == common_pb2.TOOL_ERROR_KIND_TIMEOUT
    assert result.duration.ToMilliseconds() < 4000
    assert probe.cancelled == 1
    assert final_of(events).metadata.stop_reason == agent_pb2.STOP_REASON_COMPLETED


async def test_stream_all_steps_streams_planning_tokens_without_regenerating(stack: Stack) -> None:
    events = await stack.run("hello", stream_mode=agent_pb2.STREAM_MODE_ALL_STEPS)
    final = final_of(events)
    assert final.metadata.llm_calls == 1
    reasoning = "".join(e.llm_token.reasoning_token for e in events if e.WhichOneof("event") == "llm_token")
    assert reasoning == "Greeting."
    assert (
        "".join(e.llm_token.token for e in events if e.WhichOneof("event") == "llm_token")
        == final.final_reply
    )
    assert stack.model.request_count == 1


async def test_stream_none_sends_no_tokens(stack: Stack) -> None:
    events = await stack.run("hello", stream_mode=agent_pb2.STREAM_MODE_NONE)
    assert "llm_token" not in kinds(events)
    assert final_of(events).final_reply == "Hello there, friend."
    assert final_of(events).metadata.llm_calls == 1


async def test_final_only_streams_the_answer_from_its_one_call(stack: Stack) -> None:
    events = await stack.run("hello")
    final = final_of(events)
    assert final.metadata.llm_calls == 1
    assert [r.get("stream", False) for r in stack.model.requests] == [True]
    assert "".join(e.llm_token.reasoning_token for e in events if e.WhichOneof("event") == "llm_token") == (
        "Greeting."
    )
    assert (
        "".join(e.llm_token.token for e in events if e.WhichOneof("event") == "llm_token")
        == final.final_reply
    )


async def test_invoke_returns_the_outcome_and_every_tool_result(stack: Stack) -> None:
    reply = await stack.agent.Invoke(agent_pb2.InvokeRequest(input="multi step please"), timeout=30)
    assert "7006652" in reply.final.final_reply
    assert len(reply.tool_results) == 3
    assert reply.final.metadata.llm_calls == 3  # nothing streams, nothing regenerated
    assert reply.run_id
    assert reply.thread_id
    assert all(r.get("stream", False) is False for r in stack.model.requests)


async def test_history_continues_a_conversation(stack: Stack) -> None:
    first = final_of(await stack.run("multi step please"))
    request = agent_pb2.RunRequest(input="hello again", history=first.run_messages, thread_id="t-1")
    events = [r.event async for r in stack.agent.Run(request, timeout=30)]
    assert {e.thread_id for e in events} == {"t-1"}
    sent = stack.model.requests[-1]["messages"]
    assert sent[0]["role"] == "system"
    assert sent[1]["content"] == "multi step please"
    assert sent[-1]["content"] == "hello again"


async def test_run_restricted_to_named_tools(stack: Stack) -> None:
    await stack.run("hello", tools=["calculator"])
    offered = [t["function"]["name"] for t in stack.model.requests[0]["tools"]]
    assert offered == ["calculator"]


async def test_reasoning_models_usage_is_summed(stack: Stack) -> None:
    final = final_of(await stack.run("hello"))
    per_call = [r for r in stack.model.requests]
    assert len(per_call) == 1
    assert final.metadata.usage.prompt_tokens > 0
    assert final.metadata.usage.total_tokens == (
        final.metadata.usage.prompt_tokens + final.metadata.usage.completion_tokens
    )


async def test_events_args_are_the_models_json(stack: Stack) -> None:
    events = await stack.run("multi step please")
    starts = [e.tool_start for e in events if e.WhichOneof("event") == "tool_start"]
    assert sorted(json.loads(s.arguments_json)["party"] for s in starts if s.name == "meet") == ["a", "b"]
    assert all(s.tool_call_id for s in starts)


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (agent_pb2.RunRequest(input=""), "input"),
        (agent_pb2.RunRequest(input="q", options=agent_pb2.RunOptions(max_steps=-1)), "options.max_steps"),
        (agent_pb2.RunRequest(input="q", options=agent_pb2.RunOptions(tools=["nope"])), "options.tools[0]"),
        (
            agent_pb2.RunRequest(input="q", options=agent_pb2.RunOptions(tool_timeout=duration(-1))),
            "options.tool_timeout",
        ),
        (agent_pb2.RunRequest(input="q", history=[common_pb2.Message(content="x")]), "history[0].role"),
    ],
)
async def test_invalid_run_requests_name_the_field(
    stack: Stack, request_: agent_pb2.RunRequest, field: str
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        async for _ in stack.agent.Run(request_, timeout=10):
            pass
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (info.value.details() or "").startswith(field + ":")
    invoke = agent_pb2.InvokeRequest()
    invoke.ParseFromString(request_.SerializeToString())
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.agent.Invoke(invoke, timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert stack.model.request_count == 0


async def test_slow_model_tokens_arrive_before_the_answer_is_complete(stack: Stack) -> None:
    stack.model.set_script(Script(scenarios=SCRIPT.scenarios, latency=Latency(per_token_ms=30)))
    request = agent_pb2.RunRequest(
        input="hello", options=agent_pb2.RunOptions(stream_mode=agent_pb2.STREAM_MODE_ALL_STEPS)
    )
    seen_before_final = 0
    async for response in stack.agent.Run(request, timeout=30):
        event = response.event
        if event.WhichOneof("event") == "llm_token":
            seen_before_final += 1
        if event.WhichOneof("event") == "final":
            break
    assert seen_before_final >= 3
