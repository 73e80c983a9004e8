"""A gateway killed -9 anywhere: another gateway resumes the run, and no finished tool call runs twice.

The model, the reasoner and the tool service run in the test process (so a
tool can count its own invocations); each gateway is a separate process on
the shared database, killed with SIGKILL at the point under test.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager

import grpc
import pytest

from agentloop.cli.demo import Child
from agentloop.scripted_model import Latency, Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2, agent_pb2_grpc
from tests.support.stack import Stack, final_of
from tests.support.tools import Probe, probed_stack

pytestmark = pytest.mark.integration

LEASE_S = "1.0"

SCRIPT = Script(
    scenarios=(
        Scenario(
            match="crash",
            turns=(
                Turn(
                    tool_calls=(
                        ScriptedToolCall("count_once", {"key": "fast-1"}),
                        ScriptedToolCall("count_once", {"key": "slow-1", "seconds": 1.5}),
                    )
                ),
                Turn(tool_calls=(ScriptedToolCall("count_once", {"key": "step-2"}),)),
                Turn(content="All counted: {{last_tool}}."),
            ),
        ),
        Scenario(match="remember", turns=(Turn(content="Noted."),)),
        Scenario(
            match="limits",
            turns=(
                *(
                    Turn(tool_calls=(ScriptedToolCall("count_once", {"key": f"limit-{i}", "seconds": 0.3}),))
                    for i in range(8)
                ),
                Turn(content="Counted them all."),
            ),
        ),
    )
)
FACT = "my lucky colour is blue"


@pytest.fixture
async def stack_and_probe(database_url: str) -> AsyncIterator[tuple[Stack, Probe]]:
    async with probed_stack(SCRIPT, database_url=database_url) as stack_and_probe:
        yield stack_and_probe


@contextmanager
def gateway_process(stack: Stack, database_url: str, name: str, **settings: str) -> Iterator[Child]:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url,
        AGENTLOOP_LEASE_S=LEASE_S,
        AGENTLOOP_ORPHAN_SCAN_S="0.2",
        AGENTLOOP_INSTANCE_ID=name,
        AGENTLOOP_LOG_LEVEL="INFO",
        **settings,
    )
    argv = [
        sys.executable, "-m", "agentloop.cli", "serve", "gateway", "--port", "0",
        "--reasoner", f"127.0.0.1:{stack.reasoner.port}",
        "--tools-addr", f"127.0.0.1:{stack.tools.port}",
    ]  # fmt: skip
    log_path = os.path.join(tempfile.mkdtemp(prefix="agentloop-gw-"), f"{name}.log")
    child = Child(name, argv, env, stderr_path=log_path)
    try:
        yield child
    finally:
        child.stop()


async def run_until(
    port: int, stop_when: Callable[[agent_pb2.RunEvent], bool], text: str = "crash test"
) -> list[agent_pb2.RunEvent]:
    """Start a run and read its events until `stop_when` says so (then the caller kills the gateway)."""
    seen: list[agent_pb2.RunEvent] = []
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = agent_pb2_grpc.AgentStub(channel).Run(
            agent_pb2.RunRequest(input=text, user_id="ana"), timeout=30
        )
        async for response in call:
            seen.append(response.event)
            if stop_when(response.event):
                call.cancel()
                break
    return seen


async def watch_to_end(port: int, run_id: str) -> list[agent_pb2.RunEvent]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = agent_pb2_grpc.AgentStub(channel)
        call = stub.Watch(agent_pb2.WatchRequest(run_id=run_id, user_id="ana"), timeout=30)
        return [r.event async for r in call]


def kill(child: Child) -> None:
    child.proc.kill()
    child.proc.wait()


def is_tool_end(key: str) -> Callable[[agent_pb2.RunEvent], bool]:
    def check(event: agent_pb2.RunEvent) -> bool:
        return event.WhichOneof("event") == "tool_end" and key in event.tool_end.result.content

    return check


def is_node(kind: str, node: str, step: int) -> Callable[[agent_pb2.RunEvent], bool]:
    def check(event: agent_pb2.RunEvent) -> bool:
        if event.WhichOneof("event") != kind:
            return False
        payload = event.node_start if kind == "node_start" else event.node_end
        return payload.node == node and payload.step == step

    return check


CRASH_POINTS = {
    # the fast call finished and was recorded, the slow one is running
    "during_tools": is_tool_end("fast-1"),
    # the second model call is in flight (the model answers after 1.5 s)
    "during_agent": is_node("node_start", "agent", 1),
    # the first tool round is checkpointed, the next node has not started
    "between_nodes": is_node("node_end", "tools", 1),
}


@pytest.mark.parametrize("point", sorted(CRASH_POINTS))
async def test_killed_gateway_run_is_resumed_without_rerunning_finished_tools(
    stack_and_probe: tuple[Stack, Probe], database_url: str, point: str
) -> None:
    stack, probe = stack_and_probe
    await stack.run(f"Remember that {FACT}.", user_id="ana")
    if point == "during_agent":
        stack.model.set_script(Script(scenarios=SCRIPT.scenarios, latency=Latency(response_ms=1500)))
    with gateway_process(stack, database_url, "gw-1") as first:
        seen = await run_until(first.port, CRASH_POINTS[point])
        kill(first)
    run_id = seen[0].run_id
    finished_before = dict(probe.finished)
    assert finished_before.get("fast-1") == 1

    with gateway_process(stack, database_url, "gw-2") as second:
        events = await asyncio.wait_for(watch_to_end(second.port, run_id), 30)
    final = final_of(events)
    assert final.final_reply == "All counted: counted step-2."
    assert final.metadata.steps_taken == 2
    # No finished call ran twice; every call finished exactly once in the end.
    assert dict(probe.finished) == {"fast-1": 1, "slow-1": 1, "step-2": 1}
    assert probe.started["fast-1"] == 1
    # The transcript is whole: three calls, three results, in order.
    calls = [c.id for m in final.run_messages for c in m.tool_calls]
    results = [m.tool_call_id for m in final.run_messages if m.tool_call_id]
    assert calls == results
    assert len(calls) == 3
    # The resumed run counts the calls made before the crash too, and still knows what it recalled.
    assert final.metadata.tool_calls == 3
    assert _told_the_model(stack, FACT)


def _told_the_model(stack: Stack, fact: str) -> bool:
    """Whether the newest model request carried `fact` as a recalled memory."""
    last = stack.model.requests[-1]
    return any(m["role"] == "system" and fact in (m.get("content") or "") for m in last["messages"])


async def test_two_gateways_racing_for_an_orphan_resume_it_once(
    stack_and_probe: tuple[Stack, Probe], database_url: str
) -> None:
    stack, probe = stack_and_probe
    with gateway_process(stack, database_url, "gw-a") as first:
        seen = await run_until(first.port, CRASH_POINTS["during_tools"])
        kill(first)
    run_id = seen[0].run_id
    with gateway_process(stack, database_url, "gw-b") as b, gateway_process(stack, database_url, "gw-c") as c:
        events = await asyncio.wait_for(watch_to_end(b.port, run_id), 30)
        assert final_of(events).final_reply == "All counted: counted step-2."
        await asyncio.sleep(float(LEASE_S) + 0.5)  # give a second adopter every chance to act
        c.stop()
        b.stop()
        logs = {child.name: _stderr(child) for child in (b, c)}
    adopters = [name for name, text in logs.items() if f"adopting orphaned run {run_id}" in text]
    assert len(adopters) == 1, logs
    assert dict(probe.finished) == {"fast-1": 1, "slow-1": 1, "step-2": 1}


def _stderr(child: Child) -> str:
    assert child.stderr_path is not None
    with open(child.stderr_path) as fh:
        return fh.read()


async def test_sigterm_hands_running_runs_over_at_once(
    stack_and_probe: tuple[Stack, Probe], database_url: str
) -> None:
    """Graceful shutdown: the run stays checkpointed and another gateway takes it without waiting."""
    stack, probe = stack_and_probe
    with gateway_process(stack, database_url, "gw-term") as first:
        seen = await run_until(first.port, CRASH_POINTS["during_tools"])
        first.stop()  # SIGTERM, then wait
        assert first.proc.returncode == 0
    run_id = seen[0].run_id
    row = await stack.gateway.store.get_run(run_id)
    assert row is not None
    assert row.status.value == "running"
    assert row.lease_expires_at is None or row.lease_expires_at.timestamp() <= time.time()
    with gateway_process(stack, database_url, "gw-next") as second:
        events = await asyncio.wait_for(watch_to_end(second.port, run_id), 30)
    assert final_of(events).final_reply == "All counted: counted step-2."
    assert dict(probe.finished) == {"fast-1": 1, "slow-1": 1, "step-2": 1}


async def test_an_adopted_run_keeps_the_step_limit_it_was_created_with(
    stack_and_probe: tuple[Stack, Probe], database_url: str
) -> None:
    """The limit is resolved once, by the gateway that created the run, and stored with it."""
    stack, _ = stack_and_probe
    with gateway_process(stack, database_url, "gw-3-steps", AGENTLOOP_MAX_STEPS="3") as first:
        seen = await run_until(first.port, is_tool_end("limit-0"), text="limits")
        kill(first)
    run_id = seen[0].run_id
    with gateway_process(stack, database_url, "gw-50-steps", AGENTLOOP_MAX_STEPS="50") as second:
        events = await asyncio.wait_for(watch_to_end(second.port, run_id), 30)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{second.port}") as channel:
            thread = await agent_pb2_grpc.AgentStub(channel).GetThread(
                agent_pb2.GetThreadRequest(thread_id=seen[0].thread_id, user_id="ana")
            )
    final = final_of(events)
    assert (final.metadata.steps_taken, final.metadata.stop_reason) == (3, agent_pb2.STOP_REASON_MAX_STEPS)
    assert thread.state.max_steps == 3
