"""Three gateways, two reasoners, two tool services on one Postgres: one of each killed under load.

Every service is a child process (tests/support/processes.py); the two
scripted models run in this process, one behind each reasoner. 200 runs start
at once, spread over the three gateways, each making two slow tool calls
(tests/fixtures/soak_tools.py: every execution is logged durably) before
answering. Each run is also watched through a gateway that survives. During
the load a tool service, a reasoner and a gateway get SIGKILL.

Then: every run is COMPLETED once with its own answer, no finished tool call
ran twice, and every watcher saw every stored event of its run, in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest

from agentloop.scripted_model import Latency, Scenario, Script, ScriptedModelServer, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2, agent_pb2_grpc
from bench.soak_checks import read_tool_log, tool_calls_run_twice
from gateway.store.base import RunStatus
from gateway.store.factory import open_store
from gateway.store.sql import SqlStore
from tests.fixtures.soak_tools import LOG_ENV
from tests.support.postgres import fresh_postgres_database
from tests.support.processes import ServiceProcess
from tests.support.waiting import assert_eventually

pytestmark = pytest.mark.integration

RUNS = 200
NONE = agent_pb2.STREAM_MODE_NONE
DOOMED = 0
"""Index of the replica of each kind that is killed; watchers use the other gateways."""


def script() -> Script:
    """Run i: two slow tool calls tagged with i, then an answer quoting the second.

    The first takes 5 s so that a tool service killed just after its first
    calls began has none about to finish: a call killed after it finished but
    before its result left the process is, to the gateway, a call cut short,
    and runs again (at-least-once), which is not what this test is about.
    """
    scenarios = tuple(
        Scenario(
            match=f"^run {i}$",
            turns=(
                Turn(tool_calls=(ScriptedToolCall("soak_work", {"tag": f"a{i}", "seconds": 5.0}),)),
                Turn(tool_calls=(ScriptedToolCall("soak_work", {"tag": f"b{i}", "seconds": 1.0}),)),
                Turn(content="answer {{tool:soak_work}}"),
            ),
        )
        for i in range(RUNS)
    )
    return Script(scenarios=scenarios, latency=Latency(response_ms=200))


@dataclass
class Fleet:
    url: str
    models: list[ScriptedModelServer]
    reasoners: list[ServiceProcess]
    tools: list[ServiceProcess]
    gateways: list[ServiceProcess]
    tool_log: Path
    channels: list[grpc.aio.Channel] = field(default_factory=list)

    def stub(self, i: int) -> agent_pb2_grpc.AgentStub:
        return agent_pb2_grpc.AgentStub(self.channels[i])

    def tool_starts(self, pid: int | None = None, phase: str = "start") -> int:
        """Tool executions begun (or finished) so far, by the process `pid` or by any."""
        if not self.tool_log.exists():
            return 0
        rows = [json.loads(line) for line in self.tool_log.read_text(encoding="utf-8").splitlines()]
        return sum(r["phase"] == phase and (pid is None or r["pid"] == pid) for r in rows)


@pytest.fixture
async def fleet(tmp_path: Path) -> AsyncIterator[Fleet]:
    tool_log = tmp_path / "tools.log"
    async with fresh_postgres_database() as url:
        models = [ScriptedModelServer(script()) for _ in range(2)]
        for model in models:
            await model.start()
        reasoners = [ServiceProcess("reasoner", ["--base-url", m.base_url]) for m in models]
        tools = [
            ServiceProcess("tools", ["--tools", "tests.fixtures.soak_tools"], env={LOG_ENV: str(tool_log)})
            for _ in range(2)
        ]
        env = {
            "DATABASE_URL": url,
            "AGENTLOOP_REASONER_ADDR": ",".join(p.addr for p in reasoners),
            "AGENTLOOP_TOOLS_ADDR": ",".join(p.addr for p in tools),
            "AGENTLOOP_LEASE_S": "6",
            "AGENTLOOP_ORPHAN_SCAN_S": "1",
            "AGENTLOOP_RPC_BACKOFF_S": "0.05",
            # 3 gateways × (8 + 10 overflow + 2 live) connections stay well under max_connections (100).
            "AGENTLOOP_DB_POOL_SIZE": "8",
        }
        gateways = [ServiceProcess("gateway", env=env) for _ in range(3)]
        fleet = Fleet(url, models, reasoners, tools, gateways, tool_log)
        try:
            await asyncio.gather(*(p.start() for p in [*reasoners, *tools]))
            await gateways[0].start()  # migrates the database
            await asyncio.gather(*(g.start() for g in gateways[1:]))
            fleet.channels = [grpc.aio.insecure_channel(g.addr) for g in gateways]
            yield fleet
        finally:
            for channel in fleet.channels:
                await channel.close()
            for process in [*gateways, *reasoners, *tools]:
                await process.stop()
            for model in models:
                await model.stop()


@dataclass
class Client:
    """One run: started through gateway i % 3, watched through a surviving gateway."""

    i: int
    run_id: asyncio.Future[str]
    watched: list[agent_pb2.RunEvent] = field(default_factory=list)

    async def run(self, fleet: Fleet) -> None:
        request = agent_pb2.RunRequest(
            input=f"run {self.i}", user_id="u", options=agent_pb2.RunOptions(stream_mode=NONE)
        )
        # The gateway may be killed under this stream: the watcher has the run's events.
        with contextlib.suppress(grpc.aio.AioRpcError):
            async for response in fleet.stub(self.i % 3).Run(request, timeout=240):
                if not self.run_id.done():
                    self.run_id.set_result(response.event.run_id)

    async def watch(self, fleet: Fleet) -> None:
        run_id = await self.run_id
        survivor = 1 + self.i % 2
        request = agent_pb2.WatchRequest(run_id=run_id, user_id="u", after_sequence=0)
        async for response in fleet.stub(survivor).Watch(request, timeout=240):
            self.watched.append(response.event)


async def stored_events(store: SqlStore, run_id: str) -> list[agent_pb2.RunEvent]:
    out: list[agent_pb2.RunEvent] = []
    while batch := await store.events(run_id, out[-1].sequence if out else 0):
        out.extend(batch)
    return out


async def check_run(store: SqlStore, client: Client) -> list[str]:
    """What is wrong with one run after the load (nothing, hopefully)."""
    run_id = client.run_id.result()
    row = await store.get_run(run_id)
    problems = []
    stored = await stored_events(store, run_id)
    if row is None or row.status != RunStatus.COMPLETED:
        errors = [e.error for e in stored if e.WhichOneof("event") == "error"]
        problems.append(f"run {client.i}: {row.status if row else 'missing'} {errors}")
    finals = [e for e in stored if e.WhichOneof("event") == "final"]
    if len(finals) != 1 or finals[0].final.final_reply != f"answer done b{client.i}":
        problems.append(f"run {client.i}: stored finals {[f.final.final_reply for f in finals]}")
    sequences = [e.sequence for e in client.watched]
    if sequences != sorted(set(sequences)):
        problems.append(f"run {client.i}: watcher's sequences out of order or repeated: {sequences}")
    by_sequence = {e.sequence: e for e in client.watched}
    missing = [e.sequence for e in stored if by_sequence.get(e.sequence) != e]
    if missing:
        problems.append(f"run {client.i}: watcher lacks stored events {missing}")
    if not finals or not client.watched or client.watched[-1] != finals[0]:
        problems.append(f"run {client.i}: the watcher's stream did not end with the final")
    return problems


@pytest.mark.timeout(240)  # ~30 s on an idle 2-core machine; seven processes share it
async def test_one_replica_of_each_kind_killed_under_200_runs(fleet: Fleet) -> None:
    began = time.monotonic()
    loop = asyncio.get_running_loop()
    clients = [Client(i, loop.create_future()) for i in range(RUNS)]
    tasks = [asyncio.create_task(c.run(fleet)) for c in clients]
    watchers = [asyncio.create_task(c.watch(fleet)) for c in clients]
    await asyncio.wait_for(asyncio.gather(*(c.run_id for c in clients)), 120)

    # Kill a tool service with calls in flight, then a reasoner, then (second tool round) a gateway.
    doomed_tools = fleet.tools[DOOMED].children[-1].proc.pid
    await assert_eventually(lambda: fleet.tool_starts(doomed_tools) >= 1, timeout_s=120)
    await fleet.tools[DOOMED].kill()
    await fleet.reasoners[DOOMED].kill()
    started = fleet.tool_starts()
    await assert_eventually(lambda: fleet.tool_starts() >= started + 20, timeout_s=120)
    await fleet.gateways[DOOMED].kill()

    await asyncio.wait_for(asyncio.gather(*watchers), 240)
    await asyncio.gather(*tasks)
    elapsed = time.monotonic() - began

    store = await open_store(fleet.url, migrate=False)
    try:
        problems = [p for c in clients for p in await check_run(store, c)]
        resumed = sum(
            any(
                e.WhichOneof("event") == "decision" and e.decision.kind == agent_pb2.DECISION_KIND_RESUMED
                for e in c.watched
            )
            for c in clients
        )
    finally:
        await store.close()
    assert problems == []
    assert tool_calls_run_twice(read_tool_log(fleet.tool_log)) == []
    # The killed tool service had calls in flight; they ran again on the other one.
    assert fleet.tool_starts(doomed_tools) > fleet.tool_starts(doomed_tools, "finish")
    # The killed gateway had runs; the others took them over and finished them.
    assert resumed > 0
    print(f"{RUNS} runs, 3 kills, {resumed} runs taken over, {elapsed:.1f} s")
