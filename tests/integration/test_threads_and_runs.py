"""Threads, checkpoints, concurrency policies, cancel and watch — on SQLite and on Postgres."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import pytest

from agentloop.scripted_model import Latency, Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2, common_pb2
from tests.support.stack import Stack, assert_numbered, final_of, start_stack, tokens_joined
from tests.support.tools import Probe, make_registry, probed_stack
from tests.support.waiting import assert_eventually

pytestmark = pytest.mark.integration

SCRIPT = Script(
    scenarios=(
        Scenario(
            match="two steps",
            turns=(
                Turn(
                    tool_calls=(
                        ScriptedToolCall("add", {"a": 1, "b": 2}),
                        ScriptedToolCall("add", {"a": 3, "b": 4}),
                    )
                ),
                Turn(tool_calls=(ScriptedToolCall("calculator", {"expression": "6 * 7"}),)),
                Turn(content="Sums {{tool:add}}, product {{tool:calculator}}."),
            ),
        ),
        Scenario(
            match="slow tool",
            turns=(
                Turn(
                    tool_calls=(
                        ScriptedToolCall("sleep_for", {"seconds": 30}),
                        ScriptedToolCall("add", {"a": 1, "b": 1}),
                    )
                ),
                Turn(content="done"),
            ),
        ),
        Scenario(match="", turns=(Turn(content="Reply to: {{user}}"),)),
    )
)


@pytest.fixture
async def stack_and_probe(database_url: str) -> AsyncIterator[tuple[Stack, Probe]]:
    async with probed_stack(SCRIPT, database_url=database_url) as stack_and_probe:
        yield stack_and_probe


@pytest.fixture
def stack(stack_and_probe: tuple[Stack, Probe]) -> Stack:
    return stack_and_probe[0]


async def test_a_thread_continues_its_conversation(stack: Stack) -> None:
    first = await stack.run("two steps please", user_id="ana")
    thread_id = first[0].thread_id
    second = await stack.run("and now?", thread_id=thread_id, user_id="ana")
    assert final_of(second).final_reply == "Reply to: and now?"
    sent = stack.model.requests[-1]["messages"]
    assert sent[0]["role"] == "system"
    assert sent[1]["content"] == "two steps please"
    assert sent[-1]["content"] == "and now?"
    assert sum(1 for m in sent if m["role"] == "tool") == 3

    thread = await stack.agent.GetThread(agent_pb2.GetThreadRequest(thread_id=thread_id, user_id="ana"))
    assert [m.content for m in thread.messages if m.role == common_pb2.ROLE_USER] == [
        "two steps please",
        "and now?",
    ]
    assert thread.messages[-1].content == "Reply to: and now?"
    assert thread.state.status == agent_pb2.RUN_STATUS_COMPLETED
    assert thread.state.run_id == second[0].run_id
    assert thread.state.final_reply == "Reply to: and now?"
    added = list(final_of(second).run_messages)  # this run's turn only, not the thread
    assert [m.content for m in added] == ["and now?", "Reply to: and now?"]
    assert list(thread.messages)[-len(added) :] == added


async def test_checkpoints_are_listed_in_pages_and_give_state_as_of(stack: Stack) -> None:
    events = await stack.run("two steps please", user_id="ana")
    thread_id, run_id = events[0].thread_id, events[0].run_id
    pages: list[agent_pb2.Checkpoint] = []
    token = ""
    while True:
        page = await stack.agent.ListCheckpoints(
            agent_pb2.ListCheckpointsRequest(
                thread_id=thread_id, user_id="ana", page_size=3, page_token=token
            )
        )
        assert len(page.checkpoints) <= 3
        pages.extend(page.checkpoints)
        token = page.next_page_token
        if not token:
            break
    nodes = [c.node for c in pages]
    assert nodes == ["init_state", "memory_trigger", "agent", "tools", "agent", "tools", "agent", "finalize"]
    assert [c.index for c in pages] == list(range(1, 9))
    assert all(c.run_id == run_id for c in pages)
    assert [c.next_node for c in pages] == [
        "memory_trigger",
        "agent",
        "tools",
        "agent",
        "tools",
        "agent",
        "finalize",
        "",
    ]

    after_first_tools = pages[3]
    as_of = await stack.agent.GetThread(
        agent_pb2.GetThreadRequest(
            thread_id=thread_id, user_id="ana", checkpoint_id=after_first_tools.checkpoint_id
        )
    )
    assert len(as_of.messages) == after_first_tools.message_count == 4  # question, tool calls, 2 results
    assert as_of.state.metadata.steps_taken == 1
    assert as_of.state.next_node == "agent"
    assert as_of.messages[-1].role == common_pb2.ROLE_TOOL


async def test_unknown_or_foreign_threads_are_not_found(stack: Stack) -> None:
    events = await stack.run("hello", user_id="ana")
    thread_id, run_id = events[0].thread_id, events[0].run_id
    for request in (
        agent_pb2.GetThreadRequest(thread_id=thread_id, user_id="bob"),
        agent_pb2.GetThreadRequest(thread_id="no-such-thread", user_id="ana"),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stack.agent.GetThread(request)
        assert info.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.agent.ListCheckpoints(
            agent_pb2.ListCheckpointsRequest(thread_id=thread_id, user_id="bob")
        )
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    for call in (
        stack.agent.Cancel(agent_pb2.CancelRequest(run_id=run_id, user_id="bob")),
        stack.agent.Cancel(agent_pb2.CancelRequest(run_id="nope", user_id="ana")),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await call
        assert info.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.aio.AioRpcError) as info:
        async for _ in stack.agent.Watch(agent_pb2.WatchRequest(run_id=run_id, user_id="bob")):
            pass
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    # A Run naming ana's thread id gives bob a thread of his own:
    # see test_threads_are_scoped_per_user.


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (agent_pb2.GetThreadRequest(), "thread_id"),
        (agent_pb2.GetThreadRequest(thread_id="t", checkpoint_id="garbage"), "checkpoint_id"),
    ],
)
async def test_get_thread_bad_fields(stack: Stack, request_: agent_pb2.GetThreadRequest, field: str) -> None:
    if request_.thread_id:
        await stack.run("hello", thread_id=request_.thread_id)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.agent.GetThread(request_)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (info.value.details() or "").startswith(field)


async def test_list_checkpoints_bad_fields(stack: Stack) -> None:
    events = await stack.run("hello")
    for request_, field in (
        (agent_pb2.ListCheckpointsRequest(thread_id=events[0].thread_id, page_size=-1), "page_size"),
        (agent_pb2.ListCheckpointsRequest(thread_id=events[0].thread_id, page_token="x"), "page_token"),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stack.agent.ListCheckpoints(request_)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert (info.value.details() or "").startswith(field)


async def test_history_is_refused_for_a_thread_with_messages(stack: Stack) -> None:
    events = await stack.run("hello", user_id="ana")
    request = agent_pb2.RunRequest(
        input="again",
        user_id="ana",
        thread_id=events[0].thread_id,
        history=[common_pb2.Message(role=common_pb2.ROLE_USER, content="old")],
    )
    with pytest.raises(grpc.aio.AioRpcError) as info:
        async for _ in stack.agent.Run(request):
            pass
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (info.value.details() or "").startswith("history")


async def _slow_run(stack: Stack, thread_id: str) -> agent_pb2.RunEvent:
    """Start a run that sits in a 30 s tool; returns its first event once the tool started."""
    request = agent_pb2.RunRequest(input="slow tool", thread_id=thread_id, user_id="ana")
    call = stack.agent.Run(request)
    first = None
    async for response in call:
        first = first or response.event
        if (
            response.event.WhichOneof("event") == "tool_start"
            and response.event.tool_start.name == "sleep_for"
        ):
            break
    assert first is not None
    return first


async def test_cancel_during_tools_gives_every_call_a_result(stack_and_probe: tuple[Stack, Probe]) -> None:
    stack, probe = stack_and_probe
    first = await _slow_run(stack, "t-cancel")
    reply = await stack.agent.Cancel(agent_pb2.CancelRequest(run_id=first.run_id, user_id="ana"), timeout=15)
    assert reply.status == agent_pb2.RUN_STATUS_CANCELLED
    assert probe.cancelled == 1  # the sleeping tool was really stopped

    events = [
        r.event async for r in stack.agent.Watch(agent_pb2.WatchRequest(run_id=first.run_id, user_id="ana"))
    ]
    final = final_of(events)
    assert final.metadata.stop_reason == agent_pb2.STOP_REASON_CANCELLED
    results = {
        e.tool_end.tool_call_id: e.tool_end.result for e in events if e.WhichOneof("event") == "tool_end"
    }
    assert len(results) == 2
    kinds_ = sorted(common_pb2.ToolErrorKind.Name(r.error_kind) for r in results.values())
    assert "TOOL_ERROR_KIND_CANCELLED" in kinds_

    # The thread stays valid: the next run sends every call with its result.
    nxt = await stack.run("after cancel", thread_id="t-cancel", user_id="ana")
    assert final_of(nxt).final_reply == "Reply to: after cancel"
    sent = stack.model.requests[-1]["messages"]
    called = {c["id"] for m in sent for c in (m.get("tool_calls") or [])}
    answered = {m["tool_call_id"] for m in sent if m["role"] == "tool"}
    assert called == answered
    assert len(called) == 2


async def test_cancel_of_a_finished_run_reports_its_status(stack: Stack) -> None:
    events = await stack.run("hello", user_id="ana")
    reply = await stack.agent.Cancel(agent_pb2.CancelRequest(run_id=events[0].run_id, user_id="ana"))
    assert reply.status == agent_pb2.RUN_STATUS_COMPLETED


async def test_reject_policy_refuses_a_second_run_on_a_busy_thread(stack: Stack) -> None:
    first = await _slow_run(stack, "t-busy")
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.run("hello", thread_id="t-busy", user_id="ana")
    assert info.value.code() == grpc.StatusCode.ABORTED
    assert "ENQUEUE" in (info.value.details() or "")
    await stack.agent.Cancel(agent_pb2.CancelRequest(run_id=first.run_id, user_id="ana"), timeout=15)


async def test_enqueue_policy_waits_for_the_active_run(stack: Stack) -> None:
    first = await _slow_run(stack, "t-queue")
    queued = asyncio.create_task(
        stack.run(
            "queued question",
            thread_id="t-queue",
            user_id="ana",
            concurrency=agent_pb2.CONCURRENCY_POLICY_ENQUEUE,
        )
    )
    await asyncio.sleep(0.3)
    assert not queued.done()  # still waiting behind the slow run
    await stack.agent.Cancel(agent_pb2.CancelRequest(run_id=first.run_id, user_id="ana"), timeout=15)
    events = await asyncio.wait_for(queued, 15)
    assert final_of(events).final_reply == "Reply to: queued question"
    thread = await stack.agent.GetThread(agent_pb2.GetThreadRequest(thread_id="t-queue", user_id="ana"))
    users = [m.content for m in thread.messages if m.role == common_pb2.ROLE_USER]
    assert users == ["slow tool", "queued question"]


async def test_watch_replays_a_finished_run_and_resumes_from_a_sequence(stack: Stack) -> None:
    events = await stack.run("two steps please", user_id="ana")
    run_id = events[0].run_id
    replay = [r.event async for r in stack.agent.Watch(agent_pb2.WatchRequest(run_id=run_id, user_id="ana"))]
    # A replay carries every event but streamed tokens, which come joined per step.
    assert replay == tokens_joined(events)
    assert len(replay) < len(events)
    tail = [
        r.event
        async for r in stack.agent.Watch(
            agent_pb2.WatchRequest(run_id=run_id, user_id="ana", after_sequence=10)
        )
    ]
    assert tail == [e for e in tokens_joined(events) if e.sequence > 10]


async def test_watch_follows_a_live_run_from_another_stream(stack: Stack) -> None:
    first = await _slow_run(stack, "t-watch")
    watcher = asyncio.create_task(
        _collect(
            stack.agent.Watch(agent_pb2.WatchRequest(run_id=first.run_id, user_id="ana", after_sequence=0))
        )
    )
    await asyncio.sleep(0.2)
    await stack.agent.Cancel(agent_pb2.CancelRequest(run_id=first.run_id, user_id="ana"), timeout=15)
    events = await asyncio.wait_for(watcher, 15)
    assert events[0].sequence == 1
    assert_numbered(events)
    assert final_of(events).metadata.stop_reason == agent_pb2.STOP_REASON_CANCELLED


async def _collect(call: grpc.aio.UnaryStreamCall) -> list[agent_pb2.RunEvent]:  # type: ignore[type-arg]
    return [r.event async for r in call]


async def test_client_that_disconnects_leaves_the_run_to_finish(stack: Stack) -> None:
    stack.model.set_script(Script(scenarios=SCRIPT.scenarios, latency=Latency(per_token_ms=20)))
    request = agent_pb2.RunRequest(
        input="hello there friend of mine",
        user_id="ana",
        options=agent_pb2.RunOptions(stream_mode=agent_pb2.STREAM_MODE_ALL_STEPS),
    )
    call = stack.agent.Run(request)
    run_id = ""
    async for response in call:
        run_id = response.event.run_id
        if response.event.WhichOneof("event") == "llm_token":
            break
    call.cancel()
    events = [r.event async for r in stack.agent.Watch(agent_pb2.WatchRequest(run_id=run_id, user_id="ana"))]
    assert final_of(events).final_reply == "Reply to: hello there friend of mine"


async def test_cancel_on_disconnect_stops_the_run(stack: Stack) -> None:
    stack.model.set_script(Script(scenarios=SCRIPT.scenarios, latency=Latency(per_token_ms=50)))
    request = agent_pb2.RunRequest(
        input="a long answer please " * 5,
        user_id="ana",
        options=agent_pb2.RunOptions(stream_mode=agent_pb2.STREAM_MODE_ALL_STEPS, cancel_on_disconnect=True),
    )
    call = stack.agent.Run(request)
    run_id = thread_id = ""
    async for response in call:
        run_id, thread_id = response.event.run_id, response.event.thread_id
        if response.event.WhichOneof("event") == "llm_token":
            break
    call.cancel()
    await assert_eventually(lambda: stack.agent_service.active_runs == 0, timeout_s=10)
    thread = await stack.agent.GetThread(agent_pb2.GetThreadRequest(thread_id=thread_id, user_id="ana"))
    assert thread.state.run_id == run_id
    assert thread.state.status == agent_pb2.RUN_STATUS_CANCELLED


async def test_resume_of_a_finished_run_is_refused(stack: Stack) -> None:
    events = await stack.run("hello", user_id="ana")
    with pytest.raises(grpc.aio.AioRpcError) as info:
        async for _ in stack.agent.Resume(agent_pb2.ResumeRequest(run_id=events[0].run_id, user_id="ana")):
            pass
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION


async def test_the_gateway_prunes_old_checkpoints_on_its_schedule(database_url: str) -> None:
    overrides = {"retention_keep_checkpoints": 2, "retention_interval_s": 1.0}
    stack = await start_stack(
        SCRIPT, make_registry()[0], database_url=database_url, gateway_overrides=overrides
    )
    try:
        events = await stack.run("two steps please", user_id="ana")
        thread_id = events[0].thread_id

        async def count() -> int:
            page = await stack.agent.ListCheckpoints(
                agent_pb2.ListCheckpointsRequest(thread_id=thread_id, user_id="ana")
            )
            return len(page.checkpoints)

        assert await count() == 8
        deadline = asyncio.get_running_loop().time() + 10
        while await count() != 2:
            assert asyncio.get_running_loop().time() < deadline, "retention never ran"
            await asyncio.sleep(0.1)
        # The newest checkpoint survives, so the thread still reads whole.
        thread = await stack.agent.GetThread(agent_pb2.GetThreadRequest(thread_id=thread_id, user_id="ana"))
        assert thread.state.final_reply.startswith("Sums")
        assert len(thread.messages) == 7
    finally:
        await stack.close()
