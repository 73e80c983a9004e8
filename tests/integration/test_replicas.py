"""The gateway balances its calls over several Reasoner and ToolService replicas and survives losing one.

Two reasoners (each in front of its own scripted model, so a model's request
count is its reasoner's share) and two tool services (each tool call logs
the pid that ran it) run as child processes; the gateway is given both
addresses of each as a list. Killing one reasoner and one tool service with
SIGKILL in the middle of a load of runs loses no run: a model call cut short
is retried by gRPC on the other reasoner, and a tool batch cut short is
re-issued on the other tool service for its unfinished calls only, so no
finished tool call runs twice.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from grpc_health.v1 import health_pb2

from agentloop.kernel.settings import ReasonerSettings
from agentloop.scripted_model import Latency, Scenario, Script, ScriptedModelServer, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2
from reasoner_svc.service import create_server as create_reasoner
from tests.fixtures.slow_tools import LOG_ENV
from tests.support.processes import ServiceProcess
from tests.support.stack import Stack, final_of, kinds, start_stack
from tests.support.waiting import assert_eventually

pytestmark = pytest.mark.integration

RUNS = 24
NONE = agent_pb2.STREAM_MODE_NONE


def script(latency_ms: float = 0) -> Script:
    """One scenario per run: a slow tool call with the run's own text, then an answer quoting it."""
    scenarios = tuple(
        Scenario(
            match=f"^run {i}$",
            turns=(
                Turn(tool_calls=(ScriptedToolCall("slow_echo", {"text": f"r{i}", "seconds": 1.0}),)),
                Turn(content="done {{tool:slow_echo}}"),
            ),
        )
        for i in range(RUNS)
    )
    return Script(scenarios=scenarios, latency=Latency(response_ms=latency_ms))


@dataclasses.dataclass
class Replicas:
    models: list[ScriptedModelServer]
    reasoners: list[ServiceProcess]
    tools: list[ServiceProcess]
    tool_log: Path
    stack: Stack

    def tool_runs(self) -> list[tuple[int, str, str]]:
        """(pid, start|finish, text) of every tool call any tool service ran."""
        if not self.tool_log.exists():
            return []
        rows = [line.split(" ", 2) for line in self.tool_log.read_text(encoding="utf-8").splitlines()]
        return [(int(pid), event, text) for pid, event, text in rows]

    async def run(self, i: int) -> list[agent_pb2.RunEvent]:
        return await self.stack.run(f"run {i}", deadline_s=90, stream_mode=NONE)


@pytest.fixture
async def replicas(tmp_path: Path) -> AsyncIterator[Replicas]:
    models = [ScriptedModelServer(script(latency_ms=1000)) for _ in range(2)]
    for model in models:
        await model.start()
    tool_log = tmp_path / "tools.log"
    reasoners = [ServiceProcess("reasoner", ["--base-url", m.base_url]) for m in models]
    tools = [
        ServiceProcess("tools", ["--tools", "tests.fixtures.slow_tools"], env={LOG_ENV: str(tool_log)})
        for _ in range(2)
    ]
    stack: Stack | None = None
    try:
        await asyncio.gather(*(p.start() for p in [*reasoners, *tools]))
        stack = await start_stack(
            script(),
            gateway_overrides={
                "reasoner_addr": ",".join(p.addr for p in reasoners),
                "tools_addr": ",".join(p.addr for p in tools),
                "rpc_backoff_s": 0.05,
            },
        )
        yield Replicas(models, reasoners, tools, tool_log, stack)
    finally:
        if stack is not None:
            await stack.close()
        for process in [*reasoners, *tools]:
            await process.stop()
        for model in models:
            await model.stop()


def answered(events: list[agent_pb2.RunEvent], i: int) -> None:
    assert events[-1].WhichOneof("event") == "final", (i, kinds(events), events[-1])
    assert final_of(events).final_reply == f"done slow r{i}"


async def test_calls_are_spread_over_every_replica(replicas: Replicas) -> None:
    results = await asyncio.gather(*(replicas.run(i) for i in range(RUNS)))
    for i, events in enumerate(results):
        answered(events, i)
    # Two model calls per run, round_robin over two reasoners.
    per_reasoner = [m.request_count for m in replicas.models]
    assert sum(per_reasoner) == 2 * RUNS
    assert min(per_reasoner) >= RUNS // 2, per_reasoner
    per_tool_service = Counter(pid for pid, event, _ in replicas.tool_runs() if event == "finish")
    pids = {p.children[-1].proc.pid for p in replicas.tools}
    assert set(per_tool_service) == pids
    assert sum(per_tool_service.values()) == RUNS
    assert min(per_tool_service.values()) >= RUNS // 4, per_tool_service


async def test_a_reasoner_and_a_tool_service_killed_mid_load_lose_no_run(replicas: Replicas) -> None:
    runs = [asyncio.create_task(replicas.run(i)) for i in range(RUNS)]
    # A model call takes 1 s: once the first reasoner has one in flight, kill it.
    await assert_eventually(lambda: replicas.models[0].request_count >= 1, timeout_s=60)
    await replicas.reasoners[0].kill()
    # A tool call takes 1 s: once the first tool service runs one, kill it.
    doomed = replicas.tools[0].children[-1].proc.pid
    await assert_eventually(lambda: any(pid == doomed for pid, _, _ in replicas.tool_runs()), timeout_s=60)
    await replicas.tools[0].kill()

    results = await asyncio.gather(*runs)
    for i, events in enumerate(results):
        answered(events, i)
    # The model calls cut by the kill reached the first model and were answered through the second.
    assert sum(m.request_count for m in replicas.models) > 2 * RUNS
    tool_runs = replicas.tool_runs()
    cut = {t for pid, e, t in tool_runs if pid == doomed and e == "start"} - {
        t for pid, e, t in tool_runs if pid == doomed and e == "finish"
    }
    assert cut, "no tool call was in flight on the killed tool service"
    # Every tool call finished exactly once; those cut short ran again on the survivor.
    finished = Counter(text for _, event, text in tool_runs if event == "finish")
    assert finished == Counter({f"r{i}": 1 for i in range(RUNS)})
    survivor = replicas.tools[1].children[-1].proc.pid
    assert all((survivor, "finish", t) in tool_runs for t in cut)
    # Later runs go to the survivors at once.
    answered(await replicas.run(0), 0)


HELLO = Script(scenarios=(Scenario(match="", turns=(Turn(content="hi {{user}}"),)),))


async def test_a_replica_that_reports_not_serving_gets_no_calls() -> None:
    models = [ScriptedModelServer(HELLO) for _ in range(2)]
    handles = []
    stack: Stack | None = None
    try:
        for model in models:
            await model.start()
            settings = dataclasses.replace(ReasonerSettings(), port=0, base_url=model.base_url)
            handles.append(await create_reasoner(settings))
        addrs = ",".join(f"127.0.0.1:{handle.port}" for handle in handles)
        stack = await start_stack(HELLO, gateway_overrides={"reasoner_addr": addrs})

        async def hello() -> None:
            assert stack is not None
            events = await stack.run("x", stream_mode=NONE)
            assert final_of(events).final_reply == "hi x"

        # A replica draining for shutdown says NOT_SERVING; client-side health checking skips it.
        draining = handles[0]
        await draining.handle.health.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
        # The health update reaches the gateway asynchronously: wait until round_robin skips it.
        skipped = 0
        for _ in range(40):
            seen = models[0].request_count
            await hello()
            skipped = skipped + 1 if models[0].request_count == seen else 0
            if skipped == 4:
                break
        assert skipped == 4
        before = models[0].request_count
        for _ in range(8):
            await hello()
        assert models[0].request_count == before
        assert models[1].request_count >= 8

        # Serving again: it is back in the rotation.
        await draining.handle.health.set("", health_pb2.HealthCheckResponse.SERVING)
        for _ in range(40):
            await hello()
            if models[0].request_count > before:
                break
        assert models[0].request_count > before
    finally:
        if stack is not None:
            await stack.close()
        for handle in handles:
            await handle.aclose(0)
        for model in models:
            await model.stop()
