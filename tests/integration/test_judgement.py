"""The loop's judgement end to end: loops, remaining steps, structured output, memory, hooks,
approval and serial tools — through the real services and the scripted model."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import grpc
import pytest

from agentloop.kernel.wellknown import dict_to_struct, struct_to_dict
from agentloop.scripted_model import Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2, common_pb2
from tests.support.counting_hooks import POST_REASONING_CALLS
from tests.support.stack import Stack, final_of, kinds
from tests.support.tools import Probe, probed_stack

pytestmark = pytest.mark.integration

ADD = ScriptedToolCall("add", {"a": 1, "b": 2})
CALC = ScriptedToolCall("calculator", {"expression": "3 * 3"})
SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}, "unit": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}

SCRIPT = Script(
    scenarios=(
        Scenario(match="^same again$", turns=(Turn(tool_calls=(ADD,)),)),
        Scenario(match="^ping pong$", turns=(Turn(tool_calls=(ADD,)), Turn(tool_calls=(CALC,))) * 4),
        Scenario(
            match="^stubborn$",
            turns=(
                Turn(content="Still need tools.", tool_calls=(ScriptedToolCall("track", {"label": "x"}),)),
            ),
            ignore_tool_choice=True,
        ),
        Scenario(
            match="^structured$",
            turns=(
                Turn(tool_calls=(ScriptedToolCall("final_answer", {"answer": "forty-two"}),)),
                Turn(tool_calls=(ScriptedToolCall("final_answer", {"unit": "m"}),)),
                Turn(
                    content="The answer is 42 metres.",
                    tool_calls=(ScriptedToolCall("final_answer", {"answer": 42, "unit": "m"}),),
                ),
            ),
        ),
        Scenario(
            match="^leaky$",
            turns=(Turn(tool_calls=(ScriptedToolCall("leak", {}),)), Turn(content="{{last_tool}}")),
        ),
        Scenario(
            match="^two tracked$",
            turns=(
                Turn(
                    tool_calls=(
                        ScriptedToolCall("track", {"label": "first"}),
                        ScriptedToolCall("track", {"label": "second"}),
                    )
                ),
                Turn(content="tracked both"),
            ),
        ),
        Scenario(
            match="^sql flow$",
            turns=(
                Turn(
                    tool_calls=(
                        ScriptedToolCall("sql_validate", {"query": "SELECT name FROM customers LIMIT 2"}),
                    )
                ),
                Turn(
                    tool_calls=(
                        ScriptedToolCall("sql_query", {"query": "SELECT name FROM customers LIMIT 2"}),
                    )
                ),
                Turn(content="Customers: {{tool:sql_query}}"),
            ),
        ),
        Scenario(
            match="^bad sql$",
            turns=(
                Turn(tool_calls=(ScriptedToolCall("sql_validate", {"query": "SELECT nope FROM nowhere"}),)),
                Turn(content="I could not validate it."),
            ),
        ),
        Scenario(
            match="^who am i$",
            turns=(
                Turn(tool_calls=(ScriptedToolCall("whoami", {"topic": "me"}),)),
                Turn(content="{{tool:whoami}}"),
            ),
        ),
        Scenario(
            match="^forge$",
            turns=(
                Turn(tool_calls=(ScriptedToolCall("whoami", {"topic": "me", "user": "admin"}),)),
                Turn(content="{{tool:whoami}}"),
            ),
        ),
        Scenario(match="^add please$", turns=(Turn(tool_calls=(ADD,)), Turn(content="Result: {{tool:add}}"))),
        Scenario(
            match="^never valid$",
            turns=(Turn(tool_calls=(ScriptedToolCall("final_answer", {"answer": "no"}),)),),
        ),
        Scenario(match="", turns=(Turn(content="Reply to: {{user}}"),)),
    )
)


@pytest.fixture
async def stack_and_probe() -> AsyncIterator[tuple[Stack, Probe]]:
    async with probed_stack(SCRIPT) as stack_and_probe:
        yield stack_and_probe


@pytest.fixture
def stack(stack_and_probe: tuple[Stack, Probe]) -> Stack:
    return stack_and_probe[0]


def decisions(events: list[agent_pb2.RunEvent], kind: str) -> list[str]:
    return [
        e.decision.detail
        for e in events
        if e.WhichOneof("event") == "decision"
        and e.decision.kind == agent_pb2.DecisionKind.Value(f"DECISION_KIND_{kind.upper()}")
    ]


def system_texts(request: dict[str, object]) -> list[str]:
    messages = request["messages"]
    assert isinstance(messages, list)
    return [m["content"] for m in messages if m["role"] == "system"]


# --- loop detection ------------------------------------------------------------------


async def test_same_call_in_consecutive_steps_is_stopped(stack: Stack) -> None:
    events = await stack.run("same again", max_steps=10)
    final = final_of(events)
    assert final.metadata.stop_reason == agent_pb2.STOP_REASON_LOOP_DETECTED
    assert final.metadata.steps_taken == 2
    assert "repeated twice in a row" in final.final_reply
    assert len(decisions(events, "loop_detected")) == 1


async def test_cycle_of_period_two_is_stopped(stack: Stack) -> None:
    events = await stack.run("ping pong", max_steps=10)
    final = final_of(events)
    assert final.metadata.stop_reason == agent_pb2.STOP_REASON_LOOP_DETECTED
    assert final.metadata.steps_taken == 4
    assert "cycle of 2 rounds" in final.final_reply


async def test_loop_detection_can_be_turned_off(stack: Stack) -> None:
    events = await stack.run("ping pong", max_steps=5, loop_detection=agent_pb2.LoopDetection(disabled=True))
    assert final_of(events).metadata.stop_reason == agent_pb2.STOP_REASON_MAX_STEPS
    assert final_of(events).metadata.steps_taken == 5


async def test_bad_loop_settings_are_rejected(stack: Stack) -> None:
    for options, field in (
        (
            agent_pb2.RunOptions(loop_detection=agent_pb2.LoopDetection(max_period=9)),
            "options.loop_detection.max_period",
        ),
        (
            agent_pb2.RunOptions(loop_detection=agent_pb2.LoopDetection(args_similarity=1.5)),
            "options.loop_detection.args_similarity",
        ),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stack.agent.Invoke(agent_pb2.InvokeRequest(input="x", options=options))
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert (info.value.details() or "").startswith(field)


# --- remaining steps -------------------------------------------------------------------


async def test_model_that_wants_tools_past_the_limit_is_answered_without_them(
    stack_and_probe: tuple[Stack, Probe],
) -> None:
    stack, probe = stack_and_probe
    events = await stack.run("stubborn", max_steps=2, loop_detection=agent_pb2.LoopDetection(disabled=True))
    final = final_of(events)
    assert final.metadata.stop_reason == agent_pb2.STOP_REASON_NEEDS_MORE_STEPS
    assert final.metadata.steps_taken == 2
    assert probe.order == ["x", "x"]  # the third round was not started
    assert "more steps" in final.final_reply
    assert decisions(events, "remaining_steps")
    assert stack.model.requests[-1]["tool_choice"] == "none"
    last = final.run_messages[-1]
    assert last.role == common_pb2.ROLE_ASSISTANT
    assert not last.tool_calls  # no call left without a result


# --- structured output -----------------------------------------------------------------


async def test_structured_output_is_validated_until_it_fits(stack: Stack) -> None:
    events = await stack.run("structured", output_schema=dict_to_struct(SCHEMA))
    final = final_of(events)
    assert struct_to_dict(final.structured_output) == {"answer": 42, "unit": "m"}
    assert final.final_reply == "The answer is 42 metres."
    invalid = decisions(events, "structured_output_invalid")
    assert len(invalid) == 2
    assert "answer" in invalid[0]
    assert all(r.get("tool_choice") == "required" for r in stack.model.requests)
    finish = [t for t in stack.model.requests[0]["tools"] if t["function"]["name"] == "final_answer"]
    assert finish[0]["function"]["parameters"] == SCHEMA
    # The model read why its answers were refused.
    errors = [m["content"] for m in stack.model.requests[-1]["messages"] if m["role"] == "tool"]
    assert errors[0].startswith("ERROR (invalid_arguments)")


async def test_structured_output_that_never_validates_stops_at_the_step_limit(stack: Stack) -> None:
    events = await stack.run(
        "never valid",
        max_steps=1,
        output_schema=dict_to_struct(SCHEMA),
        loop_detection=agent_pb2.LoopDetection(disabled=True),
    )
    final = final_of(events)
    assert final.metadata.stop_reason == agent_pb2.STOP_REASON_STRUCTURED_OUTPUT_MISSING
    assert final.metadata.steps_taken == 2
    assert not final.HasField("structured_output")
    assert "required format" in final.final_reply
    assert stack.model.requests[-1]["tool_choice"] == {
        "type": "function",
        "function": {"name": "final_answer"},
    }


async def test_bad_output_schema_is_rejected(stack: Stack) -> None:
    for schema in ({"type": 12}, {"properties": []}):
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stack.run("structured", output_schema=dict_to_struct(schema))
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert (info.value.details() or "").startswith("options.output_schema: is not a valid JSON Schema")


# --- memory ----------------------------------------------------------------------------


async def test_memories_are_stored_recalled_listed_and_deleted(stack: Stack) -> None:
    events = await stack.run("Remember that my favourite colour is green.", user_id="ana")
    assert decisions(events, "memory_stored") == ["my favourite colour is green"]
    listed = await stack.agent.ListMemories(agent_pb2.ListMemoriesRequest(user_id="ana"))
    assert [m.text for m in listed.memories] == ["my favourite colour is green"]

    stack.model.clear_requests()
    await stack.run("What colour do I like?", user_id="ana")  # a new thread
    assert any("favourite colour is green" in text for text in system_texts(stack.model.requests[-1]))

    stack.model.clear_requests()
    await stack.run("What colour do I like?", user_id="bob")
    assert not any("green" in text for text in system_texts(stack.model.requests[-1]))

    await stack.agent.DeleteMemory(
        agent_pb2.DeleteMemoryRequest(user_id="ana", memory_id=listed.memories[0].memory_id)
    )
    assert not (await stack.agent.ListMemories(agent_pb2.ListMemoriesRequest(user_id="ana"))).memories
    stack.model.clear_requests()
    await stack.run("What colour do I like?", user_id="ana")
    assert not any("green" in text for text in system_texts(stack.model.requests[-1]))
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.agent.DeleteMemory(agent_pb2.DeleteMemoryRequest(user_id="ana", memory_id="gone"))
    assert info.value.code() == grpc.StatusCode.NOT_FOUND


async def test_chinese_memory_instruction_and_opt_out(stack: Stack) -> None:
    await stack.run("记住我喜欢喝茶", user_id="li", disable_memory=True)
    assert not (await stack.agent.ListMemories(agent_pb2.ListMemoriesRequest(user_id="li"))).memories
    await stack.run("记住我喜欢喝茶", user_id="li")
    listed = await stack.agent.ListMemories(agent_pb2.ListMemoriesRequest(user_id="li"))
    assert [m.text for m in listed.memories] == ["我喜欢喝茶"]


# --- hooks -----------------------------------------------------------------------------


async def test_redact_secrets_hook_hides_keys_from_the_model(stack: Stack) -> None:
    events = await stack.run("leaky", hooks=["redact_secrets"])
    final = final_of(events)
    assert "sk-live" not in final.final_reply
    assert "[REDACTED]" in final.final_reply
    assert not any("sk-live" in json.dumps(r) for r in stack.model.requests)
    assert decisions(events, "hook")


async def test_without_the_hook_the_tool_result_is_untouched(stack: Stack) -> None:
    final = final_of(await stack.run("leaky"))
    assert "sk-live-0123456789abcdefghij" in final.final_reply


async def test_unknown_hook_is_rejected(stack: Stack) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.run("leaky", hooks=["nope"])
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (info.value.details() or "").startswith("options.hooks[0]")


@pytest.fixture
async def operator_stack() -> AsyncIterator[Stack]:
    """A gateway whose operator turned redact_secrets on and lets clients add the counting hook only."""
    overrides = {
        "hooks": ("redact_secrets",),
        "hook_modules": ("tests.support.counting_hooks", "tests.support.more_hooks"),
        "client_hooks": ("count_model_messages",),
    }
    async with probed_stack(SCRIPT, gateway_overrides=overrides) as (stack, _):
        yield stack


async def test_a_client_cannot_switch_off_the_operators_hooks(operator_stack: Stack) -> None:
    events = await operator_stack.run("leaky", hooks=["count_model_messages"])

    final = final_of(events)
    assert "sk-live" not in final.final_reply
    assert "[REDACTED]" in final.final_reply
    assert not any("sk-live" in json.dumps(r) for r in operator_stack.model.requests)
    # The client's own hook was added, not substituted: it ran on both model messages.
    assert POST_REASONING_CALLS[events[0].run_id] == 2


async def test_a_paused_run_resumes_with_the_operators_and_the_clients_hooks(database_url: str) -> None:
    overrides = {
        "hooks": ("redact_secrets",),
        "hook_modules": ("tests.support.counting_hooks",),
        "client_hooks": ("count_model_messages",),
    }
    async with probed_stack(SCRIPT, gateway_overrides=overrides, database_url=database_url) as (stack, _):
        paused = await stack.run("leaky", hooks=["count_model_messages"], require_approval=["leak"])
        interrupt = next(e for e in paused if e.WhichOneof("event") == "interrupt")
        decision = agent_pb2.ApprovalDecision(
            tool_call_id=interrupt.interrupt.pending[0].id, verdict=agent_pb2.ApprovalDecision.VERDICT_APPROVE
        )
        resume = agent_pb2.ResumeRequest(run_id=interrupt.run_id, decisions=[decision])
        resumed = [r.event async for r in stack.agent.Resume(resume, timeout=30)]

    final = final_of(resumed)
    assert "[REDACTED]" in final.final_reply
    assert "sk-live" not in final.final_reply
    # Both model messages, before the pause and after the resume, went through the client's hook.
    assert POST_REASONING_CALLS[interrupt.run_id] == 2


async def test_a_client_may_only_add_the_hooks_the_operator_approved(operator_stack: Stack) -> None:
    for hooks, bad in ((["shout"], 0), (["count_model_messages", "redact_secrets", "nope"], 2)):
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await operator_stack.run("leaky", hooks=hooks)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        details = info.value.details() or ""
        refusal = f"{hooks[bad]!r} is not a hook clients may add (allowed: count_model_messages)"
        assert details == f"options.hooks[{bad}]: {refusal}"
    assert operator_stack.model.requests == []


# --- serial tools ------------------------------------------------------------------------


async def test_tools_run_in_parallel_by_default_and_in_order_when_serial(
    stack_and_probe: tuple[Stack, Probe],
) -> None:
    stack, probe = stack_and_probe
    await stack.run("two tracked")
    assert probe.max_active == 2
    probe.max_active, probe.order = 0, []
    await stack.run("two tracked", serial_tools=True)
    assert probe.max_active == 1
    assert probe.order == ["first", "second"]


# --- human approval ------------------------------------------------------------------------


async def _paused(stack: Stack, thread_id: str) -> agent_pb2.RunEvent:
    events = await stack.run("add please", thread_id=thread_id, user_id="ana", require_approval=["add"])
    assert kinds(events)[-1] == "interrupt" or "interrupt" in kinds(events)
    interrupt = next(e for e in events if e.WhichOneof("event") == "interrupt")
    assert [c.name for c in interrupt.interrupt.pending] == ["add"]
    assert "final" not in kinds(events)
    return interrupt


async def _resume(
    stack: Stack, run_id: str, *decisions_: agent_pb2.ApprovalDecision
) -> list[agent_pb2.RunEvent]:
    request = agent_pb2.ResumeRequest(run_id=run_id, user_id="ana", decisions=decisions_)
    return [r.event async for r in stack.agent.Resume(request, timeout=30)]


async def test_approval_pauses_then_approve_runs_the_call(stack_and_probe: tuple[Stack, Probe]) -> None:
    stack, probe = stack_and_probe
    interrupt = await _paused(stack, "t-approve")
    assert probe.calls["add"] == 0
    thread = await stack.agent.GetThread(agent_pb2.GetThreadRequest(thread_id="t-approve", user_id="ana"))
    assert thread.state.status == agent_pb2.RUN_STATUS_PAUSED
    assert thread.state.metadata.stop_reason == agent_pb2.STOP_REASON_PAUSED
    assert thread.state.max_steps == 25
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.run("hello", thread_id="t-approve", user_id="ana")
    assert info.value.code() == grpc.StatusCode.ABORTED

    call = interrupt.interrupt.pending[0]
    events = await _resume(
        stack,
        interrupt.run_id,
        agent_pb2.ApprovalDecision(tool_call_id=call.id, verdict=agent_pb2.ApprovalDecision.VERDICT_APPROVE),
    )
    assert final_of(events).final_reply == "Result: 3"
    assert final_of(events).metadata.stop_reason == agent_pb2.STOP_REASON_COMPLETED
    assert probe.calls["add"] == 1
    assert events[0].sequence > interrupt.sequence


async def test_reject_tells_the_model_why_and_edit_changes_the_arguments(
    stack_and_probe: tuple[Stack, Probe],
) -> None:
    stack, probe = stack_and_probe
    interrupt = await _paused(stack, "t-reject")
    call = interrupt.interrupt.pending[0]
    reject = agent_pb2.ApprovalDecision(
        tool_call_id=call.id, verdict=agent_pb2.ApprovalDecision.VERDICT_REJECT, reason="not today"
    )
    events = await _resume(stack, interrupt.run_id, reject)
    assert final_of(events).final_reply == "Result: ERROR (rejected): Rejected by a person: not today"
    assert probe.calls["add"] == 0

    interrupt = await _paused(stack, "t-edit")
    call = interrupt.interrupt.pending[0]
    edit = agent_pb2.ApprovalDecision(
        tool_call_id=call.id,
        verdict=agent_pb2.ApprovalDecision.VERDICT_EDIT,
        arguments_json='{"a": 40, "b": 2}',
    )
    events = await _resume(stack, interrupt.run_id, edit)
    assert final_of(events).final_reply == "Result: 42"


async def test_resume_of_a_paused_run_needs_valid_decisions(stack: Stack) -> None:
    interrupt = await _paused(stack, "t-bad")
    cases = [
        ((), "decisions"),
        ((agent_pb2.ApprovalDecision(tool_call_id="nope", verdict=1),), "decisions[0].tool_call_id"),
        (
            (agent_pb2.ApprovalDecision(tool_call_id=interrupt.interrupt.pending[0].id),),
            "decisions[0].verdict",
        ),
        (
            (
                agent_pb2.ApprovalDecision(
                    tool_call_id=interrupt.interrupt.pending[0].id,
                    verdict=agent_pb2.ApprovalDecision.VERDICT_EDIT,
                    arguments_json="[",
                ),
            ),
            "decisions[0].arguments_json",
        ),
    ]
    for decisions_, field in cases:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await _resume(stack, interrupt.run_id, *decisions_)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert (info.value.details() or "").startswith(field)


async def test_cancelling_a_paused_run_closes_its_calls(stack: Stack) -> None:
    interrupt = await _paused(stack, "t-cancel-paused")
    reply = await stack.agent.Cancel(agent_pb2.CancelRequest(run_id=interrupt.run_id, user_id="ana"))
    assert reply.status == agent_pb2.RUN_STATUS_CANCELLED
    nxt = await stack.run("hello", thread_id="t-cancel-paused", user_id="ana")
    assert final_of(nxt).final_reply == "Reply to: hello"
    sent = stack.model.requests[-1]["messages"]
    assert {c["id"] for m in sent for c in (m.get("tool_calls") or [])} == {
        m["tool_call_id"] for m in sent if m["role"] == "tool"
    }


# --- flow guidance ---------------------------------------------------------------------


async def test_sql_flow_hints_guide_each_next_step_without_entering_the_thread(stack: Stack) -> None:
    events = await stack.run("sql flow", user_id="ana", thread_id="t-sql")
    final = final_of(events)
    assert "Alice" in final.final_reply
    assert [d.split(":")[0] for d in decisions(events, "flow_guidance")] == [
        "run_sql",
        "summarize_final_answer",
    ]
    hints = [
        [t for t in system_texts(r) if t.startswith("Suggested next step")] for r in stack.model.requests
    ]
    assert hints[0] == []
    assert hints[1][0].startswith("Suggested next step: run_sql.")
    assert hints[2][0].startswith("Suggested next step: summarize_final_answer.")
    thread = await stack.agent.GetThread(agent_pb2.GetThreadRequest(thread_id="t-sql", user_id="ana"))
    assert not any("Suggested next step" in m.content for m in thread.messages)


async def test_failed_validation_suggests_analysing_the_error(stack: Stack) -> None:
    events = await stack.run("bad sql")
    assert [d.split(":")[0] for d in decisions(events, "flow_guidance")] == ["analyze_validation_error"]
    events = await stack.run("bad sql", disable_flow_guidance=True)
    assert not decisions(events, "flow_guidance")


# --- injected arguments ------------------------------------------------------------------


async def test_injected_arguments_are_filled_by_the_gateway(stack: Stack) -> None:
    events = await stack.run("who am i", user_id="ana", thread_id="t-who")
    seen = json.loads(final_of(events).final_reply)
    assert seen == {"topic": "me", "user": "ana", "thread": "t-who", "messages": 2, "step": 0}
    spec = next(t for t in stack.model.requests[0]["tools"] if t["function"]["name"] == "whoami")
    assert set(spec["function"]["parameters"]["properties"]) == {"topic"}


async def test_model_cannot_set_a_hidden_injected_parameter(stack: Stack) -> None:
    events = await stack.run("forge", user_id="ana")
    result = next(e.tool_end.result for e in events if e.WhichOneof("event") == "tool_end")
    assert result.is_error
    assert result.error_kind == common_pb2.TOOL_ERROR_KIND_INVALID_ARGUMENTS
    assert "user" in result.content
    assert final_of(events).metadata.stop_reason == agent_pb2.STOP_REASON_COMPLETED
