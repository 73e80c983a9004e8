"""Many watchers on another gateway, a late one, a slow owner: each sees exactly what the store holds.

Two gateway processes share one Postgres; the model, reasoner and tool
service run in the test process. A run executes on gateway A; watchers attach
to it through gateway B (which follows A live over LISTEN/NOTIFY), all at
once, one more in the middle of a step, and one more while A is stopped
(SIGSTOP) so that it answers B's replay request late. After the run, every
watcher's events are compared with the stored ones: the same token text per
step, the same non-token events in the same order, numbers strictly
increasing, nothing twice.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc
import pytest

from agentloop.scripted_model import Latency, Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2, agent_pb2_grpc
from gateway.store.factory import open_store
from tests.support.postgres import fresh_postgres_database
from tests.support.processes import ServiceProcess
from tests.support.stack import Stack, start_stack
from tests.support.tools import make_registry
from tests.support.waiting import assert_eventually

pytestmark = pytest.mark.integration

TOKENS = 400
WATCHERS = 200
ANSWER = " ".join(f"w{i}" for i in range(TOKENS))
SCRIPT = Script(
    scenarios=(
        Scenario(
            match="^talk$",
            turns=(
                Turn(content=ANSWER[:300], tool_calls=(ScriptedToolCall("calculator", {"expression": "2"}),)),
                Turn(content=ANSWER),
            ),
        ),
    ),
    latency=Latency(first_token_ms=20, per_token_ms=8),
)
ALL = agent_pb2.STREAM_MODE_ALL_STEPS


@dataclass
class Pair:
    stack: Stack
    owner: ServiceProcess
    watcher: ServiceProcess
    url: str

    def stub(self, gateway: ServiceProcess) -> agent_pb2_grpc.AgentStub:
        channel = grpc.aio.insecure_channel(gateway.addr)
        self.stack.resources.push_async_callback(channel.close)
        return agent_pb2_grpc.AgentStub(channel)


@pytest.fixture
async def pair() -> AsyncIterator[Pair]:
    async with fresh_postgres_database() as url:
        registry, _ = make_registry()
        stack = await start_stack(SCRIPT, registry, database_url=url)
        args = ["--reasoner", f"127.0.0.1:{stack.reasoner.port}"]
        args += ["--tools-addr", f"127.0.0.1:{stack.tools.port}"]
        processes = [
            ServiceProcess("gateway", args, env={"DATABASE_URL": url, "AGENTLOOP_INSTANCE_ID": name})
            for name in ("owner-a", "watcher-b")
        ]
        try:
            for process in processes:
                await process.start()
            yield Pair(stack, processes[0], processes[1], url)
        finally:
            for process in processes:
                await process.stop()
            await stack.close()


def story(events: list[agent_pb2.RunEvent]) -> tuple[dict[tuple[int, str], str], list[bytes]]:
    """(token text per (step, kind), the non-token events in order): what "the same events" means.

    Stored replays join a step's tokens into one event, live streams send them
    one by one; the text per step and everything else must be equal.
    """
    text: dict[tuple[int, str], str] = {}
    others: list[bytes] = []
    for event in events:
        if event.WhichOneof("event") == "llm_token":
            token = event.llm_token
            kind = token.WhichOneof("content") or "token"
            key = (token.step, kind)
            text[key] = text.get(key, "") + getattr(token, kind)
        else:
            others.append(event.SerializeToString(deterministic=True))
    return text, others


def problems(name: str, watched: list[agent_pb2.RunEvent], stored: list[agent_pb2.RunEvent]) -> list[str]:
    """What is wrong with one watcher's events, compared with the store's."""
    found = []
    sequences = [e.sequence for e in watched]
    if any(b <= a for a, b in itertools.pairwise(sequences)):
        found.append(f"{name}: numbers not strictly increasing")
    text, others = story(watched)
    stored_text, stored_others = story(stored)
    for key in sorted(set(text) | set(stored_text)):
        if text.get(key, "") != stored_text.get(key, ""):
            seen, kept = len(text.get(key, "")), len(stored_text.get(key, ""))
            found.append(f"{name}: step {key[0]} {key[1]}: {seen} characters watched, {kept} stored")
    if others != stored_others:
        found.append(f"{name}: non-token events differ ({len(others)} watched, {len(stored_others)} stored)")
    return found


async def watched(stub: agent_pb2_grpc.AgentStub, run_id: str) -> list[agent_pb2.RunEvent]:
    request = agent_pb2.WatchRequest(run_id=run_id, user_id="ana")
    return [response.event async for response in stub.Watch(request, timeout=120)]


async def one_trial(pair: Pair, *, slow_owner: bool) -> list[str]:
    """One run on A watched through B: WATCHERS at once, one mid-step, one more (A stopped if slow_owner)."""
    owner_stub, watcher_stub = pair.stub(pair.owner), pair.stub(pair.watcher)
    run = owner_stub.Run(
        agent_pb2.RunRequest(input="talk", user_id="ana", options=agent_pb2.RunOptions(stream_mode=ALL)),
        timeout=120,
    )
    seen: list[agent_pb2.RunEvent] = []

    async def owner_events() -> None:
        async for response in run:
            seen.append(response.event)

    owner_task = asyncio.create_task(owner_events())
    await assert_eventually(lambda: any(e.WhichOneof("event") == "llm_token" for e in seen), timeout_s=30)
    run_id = seen[0].run_id
    crowd = [asyncio.create_task(watched(watcher_stub, run_id)) for _ in range(WATCHERS)]
    await assert_eventually(
        lambda: sum(e.WhichOneof("event") == "llm_token" for e in seen) >= 60, timeout_s=30
    )
    late = [asyncio.create_task(watched(watcher_stub, run_id))]
    await assert_eventually(
        lambda: sum(e.WhichOneof("event") == "llm_token" and e.llm_token.step == 1 for e in seen) >= 50,
        timeout_s=60,
    )
    pid = pair.owner.children[-1].proc.pid
    if slow_owner:
        os.kill(pid, signal.SIGSTOP)
    try:
        late.append(asyncio.create_task(watched(watcher_stub, run_id)))
        if slow_owner:
            await asyncio.sleep(1.6)  # past the watcher's wait for a replay
    finally:
        if slow_owner:
            os.kill(pid, signal.SIGCONT)
    await asyncio.wait_for(owner_task, 120)
    results = await asyncio.gather(*crowd, *late)
    store = await open_store(pair.url, migrate=False)
    try:
        stored = await store.events(run_id, 0, limit=100_000)
    finally:
        await store.close()
    assert stored[-1].WhichOneof("event") == "final"
    found = problems("owner", seen, stored)
    for i, events in enumerate(results):
        name = f"watcher {i}" if i < WATCHERS else f"late watcher {i - WATCHERS}"
        found.extend(problems(name, events, stored))
    return found


@pytest.mark.timeout(600)
@pytest.mark.parametrize("slow_owner", [False, True], ids=["prompt-owner", "slow-owner"])
async def test_every_watcher_sees_exactly_the_stored_events(pair: Pair, slow_owner: bool) -> None:
    trials = int(os.environ.get("AGENTLOOP_WATCH_TRIALS", "2"))
    failures: list[str] = []
    failed_trials = 0
    for trial in range(trials):
        found = await one_trial(pair, slow_owner=slow_owner)
        failed_trials += bool(found)
        watchers = len({problem.split(":")[0] for problem in found})
        if found:
            failures.append(f"trial {trial}: {watchers} streams differ from the store")
        failures.extend(f"trial {trial}: {problem}" for problem in found[:4])
    assert not failures, f"{failed_trials} of {trials} trials failed:\n" + "\n".join(failures[:30])
