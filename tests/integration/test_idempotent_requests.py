"""A retried request with the same request_id attaches to the run it started: one run, not two.

The retries here are what a client does after losing its connection before
the first event, without knowing the thread (it left thread_id empty) or the
run: ListThreads finds the thread, ListRuns its runs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import grpc
import pytest

from agentloop.scripted_model import Latency, Script
from agentloop.v1 import agent_pb2, agent_pb2_grpc
from tests.support.scripts import add_scenario
from tests.support.stack import Stack, final_of, start_stack, tokens_joined
from tests.support.tools import make_registry

pytestmark = pytest.mark.integration

USER = "ana"


@pytest.fixture
async def stack() -> AsyncIterator[Stack]:
    # A slow model: the first attempt's run is still going when the client comes back.
    stack = await start_stack(Script(latency=Latency(response_ms=500)))
    try:
        yield stack
    finally:
        await stack.close()


async def eventually(probe: Callable[[], Awaitable[bool]], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not await probe():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


async def threads_of(agent: agent_pb2_grpc.AgentStub) -> list[agent_pb2.ThreadSummary]:
    return list((await agent.ListThreads(agent_pb2.ListThreadsRequest(user_id=USER), timeout=10)).threads)


async def dropped_before_the_first_event(stack: Stack, request: agent_pb2.RunRequest) -> None:
    """Send a Run and drop the connection at once, as a client whose network went away."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{stack.gateway.port}") as channel:
        call = agent_pb2_grpc.AgentStub(channel).Run(request, timeout=30)
        await call.wait_for_connection()
        call.cancel()


async def test_a_run_retried_after_a_drop_is_one_run(stack: Stack) -> None:
    request = agent_pb2.RunRequest(input="hello there", user_id=USER, request_id="req-7f3a")
    await dropped_before_the_first_event(stack, request)
    # The run went on without its client (cancel_on_disconnect is off): its thread shows up.
    await eventually(lambda: _has_threads(stack.agent))

    events = [r.event async for r in stack.agent.Run(request, timeout=30)]
    final = final_of(events)
    assert events[0].sequence == 1  # the run's events from its start
    (thread,) = await threads_of(stack.agent)
    assert thread.thread_id == events[0].thread_id
    assert thread.latest_run_id == events[0].run_id
    assert thread.latest_run_status == agent_pb2.RUN_STATUS_COMPLETED
    assert thread.preview == final.final_reply
    history = await stack.agent.GetThread(
        agent_pb2.GetThreadRequest(thread_id=thread.thread_id, user_id=USER), timeout=10
    )
    assert [m.content for m in history.messages] == ["hello there", final.final_reply]  # 2, not 4
    runs = await stack.agent.ListRuns(
        agent_pb2.ListRunsRequest(thread_id=thread.thread_id, user_id=USER), timeout=10
    )
    assert [(r.run_id, r.request_id) for r in runs.runs] == [(events[0].run_id, "req-7f3a")]


async def _has_threads(agent: agent_pb2_grpc.AgentStub) -> bool:
    return bool(await threads_of(agent))


async def test_invoke_retried_returns_the_same_outcome(stack: Stack) -> None:
    request = agent_pb2.InvokeRequest(input="once only", user_id=USER, request_id="inv-1")
    attempt = asyncio.ensure_future(stack.agent.Invoke(request, timeout=30))
    await eventually(lambda: _has_threads(stack.agent))
    attempt.cancel()  # the client goes away before the answer; the run goes on
    with pytest.raises(asyncio.CancelledError):
        await attempt
    first, second = await asyncio.gather(
        stack.agent.Invoke(request, timeout=30), stack.agent.Invoke(request, timeout=30)
    )
    assert first.run_id == second.run_id
    assert first.final.final_reply == second.final.final_reply
    runs = await stack.agent.ListRuns(
        agent_pb2.ListRunsRequest(thread_id=first.thread_id, user_id=USER), timeout=10
    )
    assert len(runs.runs) == 1
    # The same key from another user is another request.
    other = await stack.agent.Invoke(
        agent_pb2.InvokeRequest(input="once only", user_id="bob", request_id="inv-1"), timeout=30
    )
    assert other.run_id != first.run_id


async def test_threads_and_runs_are_listed_in_pages(stack: Stack) -> None:
    thread_ids = []
    for i in range(3):
        reply = await stack.agent.Invoke(agent_pb2.InvokeRequest(input=f"q{i}", user_id=USER), timeout=30)
        thread_ids.append(reply.thread_id)
    await stack.agent.Invoke(
        agent_pb2.InvokeRequest(input="again", user_id=USER, thread_id=thread_ids[0]), timeout=30
    )
    first = await stack.agent.ListThreads(agent_pb2.ListThreadsRequest(user_id=USER, page_size=2), timeout=10)
    rest = await stack.agent.ListThreads(
        agent_pb2.ListThreadsRequest(user_id=USER, page_size=2, page_token=first.next_page_token), timeout=10
    )
    assert rest.next_page_token == ""
    listed = [t.thread_id for t in [*first.threads, *rest.threads]]
    assert listed == [thread_ids[0], thread_ids[2], thread_ids[1]]  # most recently updated first
    runs = await stack.agent.ListRuns(
        agent_pb2.ListRunsRequest(thread_id=thread_ids[0], user_id=USER, page_size=1), timeout=10
    )
    assert len(runs.runs) == 1
    assert runs.next_page_token
    assert runs.runs[0].final_reply.endswith("again")
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.agent.ListRuns(
            agent_pb2.ListRunsRequest(thread_id=thread_ids[0], user_id="bob"), timeout=10
        )
    assert info.value.code() == grpc.StatusCode.NOT_FOUND


async def test_a_resume_retried_with_its_request_id_attaches_to_the_resumption() -> None:
    script = Script(scenarios=(add_scenario(2, 3, "Sum ready.", match="^add please$"),))
    registry, probe = make_registry()
    stack = await start_stack(script, registry)
    try:
        paused = await stack.run("add please", user_id=USER, require_approval=["add"])
        interrupt = next(e for e in paused if e.WhichOneof("event") == "interrupt")
        decision = agent_pb2.ApprovalDecision(
            tool_call_id=interrupt.interrupt.pending[0].id, verdict=agent_pb2.ApprovalDecision.VERDICT_APPROVE
        )
        request = agent_pb2.ResumeRequest(
            run_id=interrupt.run_id, user_id=USER, decisions=[decision], request_id="resume-1"
        )
        first = [r.event async for r in stack.agent.Resume(request, timeout=30)]
        # The answer was lost on the way: the client sends the same Resume again.
        again = [r.event async for r in stack.agent.Resume(request, timeout=30)]
        assert final_of(again) == final_of(first)
        assert again == tokens_joined(first)  # the stored events of that resumption, tokens joined
        assert probe.calls["add"] == 1  # resumed once, the call ran once
        # Without the key the second Resume is refused: the run is no longer paused.
        retry = agent_pb2.ResumeRequest(run_id=interrupt.run_id, user_id=USER, decisions=[decision])
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await drain_resume(stack, retry)
        assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    finally:
        await stack.close()


async def drain_resume(stack: Stack, request: agent_pb2.ResumeRequest) -> None:
    async for _ in stack.agent.Resume(request, timeout=30):
        pass
