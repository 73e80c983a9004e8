"""One request id, many attempts at once: one execution, and every attempt gets its answer.

Clients retry. A retry may arrive while the first attempt is still being set
up, or thirty copies of one request may arrive together (a client library
retrying on every replica). Whatever the timing, the store's unique index on
(user, request_id) and one compare-and-set decide which attempt executes;
the others attach to that run and answer what it answers. On both stores,
several rounds each, since a race shows itself only sometimes.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from agentloop.scripted_model import Latency, Script
from agentloop.v1 import agent_pb2
from tests.support.scripts import add_scenario
from tests.support.stack import Stack, final_of, start_stack, tokens_joined
from tests.support.tools import make_registry

pytestmark = pytest.mark.integration

USER = "ana"
COPIES = 30
ROUNDS = 4


@pytest.fixture
async def stack(database_url: str) -> AsyncIterator[Stack]:
    stack = await start_stack(
        Script(latency=Latency(response_ms=20), scenarios=(add_scenario(2, 3, "Sum ready.", match="^add"),)),
        make_registry()[0],
        database_url=database_url,
    )
    try:
        yield stack
    finally:
        await stack.close()


async def _streamed(call: AsyncIterator[Any]) -> list[agent_pb2.RunEvent]:
    """The events of a Run, Resume or Watch stream, to its end."""
    return [response.event async for response in call]


async def _runs_of(stack: Stack, thread_id: str) -> list[str]:
    listed = await stack.agent.ListRuns(
        agent_pb2.ListRunsRequest(thread_id=thread_id, user_id=USER), timeout=10
    )
    return [r.run_id for r in listed.runs]


async def test_thirty_identical_invokes_are_one_run_with_one_answer(stack: Stack) -> None:
    for _ in range(ROUNDS):
        request = agent_pb2.InvokeRequest(input="hello", user_id=USER, request_id=uuid.uuid4().hex)
        answers = await asyncio.gather(*(stack.agent.Invoke(request, timeout=60) for _ in range(COPIES)))
        assert {a.run_id for a in answers} == {answers[0].run_id}
        assert {a.final.final_reply for a in answers} == {"You said: hello"}
        assert await _runs_of(stack, answers[0].thread_id) == [answers[0].run_id]


async def test_thirty_identical_runs_stream_the_one_run_they_made(stack: Stack) -> None:
    for _ in range(ROUNDS):
        request = agent_pb2.RunRequest(input="add please", user_id=USER, request_id=uuid.uuid4().hex)

        streams = await asyncio.gather(
            *(_streamed(stack.agent.Run(request, timeout=60)) for _ in range(COPIES))
        )
        run_ids = {e.run_id for events in streams for e in events}
        assert len(run_ids) == 1, run_ids
        assert {final_of(events).final_reply for events in streams} == {"Sum ready."}
        (run_id,) = run_ids
        assert await _runs_of(stack, streams[0][0].thread_id) == [run_id]
        # Each stream is the run's own events from its first, once each.
        stored = [
            r.event async for r in stack.agent.Watch(agent_pb2.WatchRequest(run_id=run_id, user_id=USER))
        ]
        for events in streams:
            assert tokens_joined(events) == stored


async def test_a_retry_after_a_drop_during_setup_is_answered(stack: Stack) -> None:
    """The first attempt's deadline passes at some point of its setup; its retry always gets the ending."""
    for i in range(12):
        request = agent_pb2.RunRequest(input="hello", user_id=USER, request_id=uuid.uuid4().hex)
        with contextlib.suppress(grpc.aio.AioRpcError):  # DEADLINE_EXCEEDED, mostly
            async for _ in stack.agent.Run(request, timeout=0.002 + i * 0.002):
                pass
        events = [r.event async for r in stack.agent.Run(request, timeout=60)]
        assert events, f"round {i}: the retry got no events"
        # The run's own ending, whatever it is: its answer, the first attempt's deadline (which is
        # the run's), or the cancellation of a run whose setup was cut short.
        assert events[-1].WhichOneof("event") in ("final", "error"), events[-1]
        run_id = events[0].run_id
        stored = await _streamed(stack.agent.Watch(agent_pb2.WatchRequest(run_id=run_id, user_id=USER)))
        assert stored[-1] == events[-1]


async def test_six_concurrent_resumes_with_one_request_id_get_one_answer(stack: Stack) -> None:
    for _ in range(ROUNDS):
        paused = await stack.run("add please", user_id=USER, require_approval=["add"])
        interrupt = next(e for e in paused if e.WhichOneof("event") == "interrupt")
        decision = agent_pb2.ApprovalDecision(
            tool_call_id=interrupt.interrupt.pending[0].id, verdict=agent_pb2.ApprovalDecision.VERDICT_APPROVE
        )
        request = agent_pb2.ResumeRequest(
            run_id=interrupt.run_id, user_id=USER, decisions=[decision], request_id=uuid.uuid4().hex
        )

        streams = await asyncio.gather(
            *(_streamed(stack.agent.Resume(request, timeout=60)) for _ in range(6))
        )
        assert {final_of(events).final_reply for events in streams} == {"Sum ready."}
        firsts = {events[0].sequence for events in streams}
        assert len(firsts) == 1, firsts  # every attempt streams the one resumption from its start


async def test_two_decisions_for_one_call_are_refused_naming_the_second(stack: Stack) -> None:
    paused = await stack.run("add please", user_id=USER, require_approval=["add"])
    interrupt = next(e for e in paused if e.WhichOneof("event") == "interrupt")
    call_id = interrupt.interrupt.pending[0].id
    approve = agent_pb2.ApprovalDecision(
        tool_call_id=call_id, verdict=agent_pb2.ApprovalDecision.VERDICT_APPROVE
    )
    reject = agent_pb2.ApprovalDecision(
        tool_call_id=call_id, verdict=agent_pb2.ApprovalDecision.VERDICT_REJECT
    )
    request = agent_pb2.ResumeRequest(run_id=interrupt.run_id, user_id=USER, decisions=[approve, reject])
    with pytest.raises(grpc.aio.AioRpcError) as info:
        async for _ in stack.agent.Resume(request, timeout=30):
            pass
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (info.value.details() or "").startswith(
        f"decisions[1].tool_call_id: {call_id!r} already has a decision"
    )
    # Nothing was decided: the run still waits, and one decision resumes it.
    request = agent_pb2.ResumeRequest(run_id=interrupt.run_id, user_id=USER, decisions=[approve])
    resumed = [r.event async for r in stack.agent.Resume(request, timeout=30)]
    assert final_of(resumed).final_reply == "Sum ready."
