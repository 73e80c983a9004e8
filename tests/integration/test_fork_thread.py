"""Time travel: a thread forked at any checkpoint goes on as a thread of its own."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest

from agentloop.v1 import agent_pb2, agent_pb2_grpc, common_pb2
from gateway.journal.closing import NOT_RUN_RESULT
from tests.integration.test_threads_and_runs import SCRIPT
from tests.support.stack import Stack, final_of, start_stack
from tests.support.tools import make_registry

pytestmark = pytest.mark.integration


@pytest.fixture
async def stack(database_url: str) -> AsyncIterator[Stack]:
    stack = await start_stack(SCRIPT, make_registry()[0], database_url=database_url)
    try:
        yield stack
    finally:
        await stack.close()


async def contents(agent: agent_pb2_grpc.AgentStub, thread_id: str) -> list[str]:
    reply = await agent.GetThread(agent_pb2.GetThreadRequest(thread_id=thread_id, user_id="ana"))
    return [m.content or m.tool_calls[0].name if m.tool_calls else m.content for m in reply.messages]


async def test_a_fork_at_a_checkpoint_continues_independently(stack: Stack) -> None:
    events = await stack.run("two steps please", user_id="ana")
    thread_id = events[0].thread_id
    original = await contents(stack.agent, thread_id)
    checkpoints = await stack.agent.ListCheckpoints(
        agent_pb2.ListCheckpointsRequest(thread_id=thread_id, user_id="ana")
    )
    after_first_tools = checkpoints.checkpoints[3]  # question, tool calls, their two results
    assert after_first_tools.node == "tools"

    fork = await stack.agent.ForkThread(
        agent_pb2.ForkThreadRequest(
            thread_id=thread_id, user_id="ana", checkpoint_id=after_first_tools.checkpoint_id
        )
    )
    assert fork.thread_id != thread_id
    assert fork.message_count == after_first_tools.message_count == 4
    assert await contents(stack.agent, fork.thread_id) == original[:4]
    state = await stack.agent.GetThread(agent_pb2.GetThreadRequest(thread_id=fork.thread_id, user_id="ana"))
    assert not state.HasField("state")  # no runs yet: the fork is a thread of its own

    on_fork = final_of(await stack.run("and now?", user_id="ana", thread_id=fork.thread_id))
    assert on_fork.run_messages[0].content == "and now?"
    forked = await contents(stack.agent, fork.thread_id)
    assert forked[:4] == original[:4]
    assert forked[4:] == ["and now?", on_fork.final_reply]
    assert await contents(stack.agent, thread_id) == original  # the original is unchanged

    # And the other way round: a run on the original leaves the fork as it was.
    await stack.run("once more", user_id="ana", thread_id=thread_id)
    assert await contents(stack.agent, fork.thread_id) == forked
    runs = await stack.agent.ListRuns(agent_pb2.ListRunsRequest(thread_id=fork.thread_id, user_id="ana"))
    assert len(runs.runs) == 1


async def test_fork_refuses_unknown_checkpoints_and_taken_ids(stack: Stack) -> None:
    events = await stack.run("two steps please", user_id="ana")
    thread_id, run_id = events[0].thread_id, events[0].run_id
    other = (await stack.run("hello", user_id="ana"))[0].thread_id
    cases = [
        (agent_pb2.ForkThreadRequest(thread_id=thread_id, user_id="ana"), grpc.StatusCode.INVALID_ARGUMENT),
        (
            agent_pb2.ForkThreadRequest(thread_id=thread_id, user_id="ana", checkpoint_id=f"{run_id}:99"),
            grpc.StatusCode.NOT_FOUND,
        ),
        (
            agent_pb2.ForkThreadRequest(thread_id=other, user_id="ana", checkpoint_id=f"{run_id}:2"),
            grpc.StatusCode.NOT_FOUND,
        ),
        (
            agent_pb2.ForkThreadRequest(
                thread_id=thread_id, user_id="ana", checkpoint_id=f"{run_id}:2", new_thread_id=other
            ),
            grpc.StatusCode.ALREADY_EXISTS,
        ),
    ]
    for request, code in cases:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stack.agent.ForkThread(request)
        assert info.value.code() == code, request
    named = await stack.agent.ForkThread(
        agent_pb2.ForkThreadRequest(
            thread_id=thread_id, user_id="ana", checkpoint_id=f"{run_id}:2", new_thread_id="my-fork"
        )
    )
    assert named.thread_id == "my-fork"
    assert named.message_count == 1  # the question only
    reply = await stack.agent.GetThread(agent_pb2.GetThreadRequest(thread_id="my-fork", user_id="ana"))
    assert [m.role for m in reply.messages] == [common_pb2.ROLE_USER]


def assert_a_valid_conversation(messages: list[dict[str, object]]) -> None:
    """What chat-completions providers require: every tool call answered before anything else is said."""
    open_calls: list[str] = []
    for message in messages:
        if message["role"] == "tool":
            assert message["tool_call_id"] in open_calls, message
            open_calls.remove(str(message["tool_call_id"]))
            continue
        assert not open_calls, f"tool calls {open_calls} have no results before {message}"
        calls = message.get("tool_calls") or []
        assert isinstance(calls, list)
        open_calls = [str(call["id"]) for call in calls]
    assert not open_calls, f"the request ends with tool calls {open_calls} that have no results"


async def test_a_fork_between_tool_calls_and_their_results_closes_the_open_calls(stack: Stack) -> None:
    events = await stack.run("two steps please", user_id="ana")
    thread_id = events[0].thread_id
    checkpoints = await stack.agent.ListCheckpoints(
        agent_pb2.ListCheckpointsRequest(thread_id=thread_id, user_id="ana")
    )
    asked = checkpoints.checkpoints[2]  # the model asked for two tool calls; no result yet
    assert (asked.node, asked.next_node, asked.message_count) == ("agent", "tools", 2)

    fork = await stack.agent.ForkThread(
        agent_pb2.ForkThreadRequest(thread_id=thread_id, user_id="ana", checkpoint_id=asked.checkpoint_id)
    )
    thread = await stack.agent.GetThread(agent_pb2.GetThreadRequest(thread_id=fork.thread_id, user_id="ana"))
    assert fork.message_count == thread.total_messages == 4
    calls = thread.messages[1].tool_calls
    assert [m.tool_call_id for m in thread.messages[2:]] == [c.id for c in calls]
    assert all(m.content == f"ERROR (cancelled): {NOT_RUN_RESULT}" for m in thread.messages[2:])

    # The next run on the fork sends the model a conversation it accepts.
    stack.model.requests.clear()
    on_fork = final_of(await stack.run("and now?", user_id="ana", thread_id=fork.thread_id))
    assert on_fork.run_messages[0].content == "and now?"
    sent = stack.model.requests[0]["messages"]
    assert_a_valid_conversation(sent)
    assert [m["role"] for m in sent if m["role"] != "system"][:5] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "user",
    ]
    # The original thread is as it was: the calls ran there.
    original = await stack.agent.GetThread(agent_pb2.GetThreadRequest(thread_id=thread_id, user_id="ana"))
    assert [m.content for m in original.messages[2:4]] == ["3", "7"]
