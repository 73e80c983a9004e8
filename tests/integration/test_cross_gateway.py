"""Two gateways on one Postgres: a run executing on A is watched and cancelled through B, live.

Each gateway is a whole in-process stack (its own model, reasoner and tool
service) on the same database. B learns of A's events over LISTEN/NOTIFY as A
delivers them, so tokens reach B before the checkpoint that stores them, and
a Cancel received by B stops the run on A at once instead of at A's next
checkpoint. When B's listener connection is killed, B's watcher goes on from
the store and still sends every event once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import asyncpg
import pytest

from agentloop.scripted_model import Latency, Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2
from gateway.runs.live import run_channel
from gateway.store.notify import APPLICATION_NAME
from tests.support.postgres import fresh_postgres_database
from tests.support.stack import Stack, start_stack, tokens_joined
from tests.support.tools import make_registry
from tests.support.waiting import assert_eventually

pytestmark = pytest.mark.integration

WORDS = " ".join(f"w{i}" for i in range(60))
SCRIPT = Script(
    scenarios=(
        Scenario(match="^talk$", turns=(Turn(content=WORDS),)),
        Scenario(
            match="^wait$",
            turns=(
                Turn(tool_calls=(ScriptedToolCall("sleep_for", {"seconds": 60}),)),
                Turn(content="slept"),
            ),
        ),
    ),
    latency=Latency(first_token_ms=50, per_token_ms=40),
)
ALL = agent_pb2.STREAM_MODE_ALL_STEPS


@pytest.fixture
async def gateways() -> AsyncIterator[tuple[Stack, Stack, str]]:
    async with fresh_postgres_database() as url:
        stacks: list[Stack] = []
        try:
            for _ in range(2):
                registry, _probe = make_registry()
                stacks.append(await start_stack(SCRIPT, registry, database_url=url))
            yield stacks[0], stacks[1], url
        finally:
            for stack in stacks:
                await stack.close()


async def started(stack: Stack, text: str) -> tuple[str, asyncio.Task[list[agent_pb2.RunEvent]], list[str]]:
    """Start a Run on `stack`; its run id, the task collecting its events, and event kinds as they come."""
    first: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    seen: list[str] = []

    async def collect() -> list[agent_pb2.RunEvent]:
        out = []
        options = agent_pb2.RunOptions(stream_mode=ALL)
        request = agent_pb2.RunRequest(input=text, user_id="ana", options=options)
        async for response in stack.agent.Run(request, timeout=90):
            if not first.done():
                first.set_result(response.event.run_id)
            seen.append(response.event.WhichOneof("event") or "")
            out.append(response.event)
        return out

    task = asyncio.create_task(collect())
    return await asyncio.wait_for(first, 30), task, seen


def watch(stack: Stack, run_id: str) -> AsyncIterator[agent_pb2.WatchResponse]:
    request = agent_pb2.WatchRequest(run_id=run_id, user_id="ana", after_sequence=0)
    stream: AsyncIterator[agent_pb2.WatchResponse] = stack.agent.Watch(request, timeout=90)
    return stream


def assert_same_events(watched: list[agent_pb2.RunEvent], owner: list[agent_pb2.RunEvent]) -> None:
    """Every event once, in order: the same as the owner's own stream, tokens joined alike."""
    sequences = [e.sequence for e in watched]
    assert sequences == sorted(set(sequences)), sequences
    assert tokens_joined(list(watched)) == tokens_joined(list(owner))


async def stored_kinds(stack: Stack, run_id: str) -> list[str]:
    return [e.WhichOneof("event") or "" for e in await stack.gateway.manager.store.events(run_id, 0)]


async def test_tokens_reach_a_watcher_on_another_gateway_before_their_checkpoint(
    gateways: tuple[Stack, Stack, str],
) -> None:
    a, b, _ = gateways
    run_id, owner_run, _ = await started(a, "talk")
    assert b.gateway.manager.local(run_id) is None
    watched: list[agent_pb2.RunEvent] = []
    tokens_before_stored = 0
    async for response in watch(b, run_id):
        watched.append(response.event)
        if response.event.WhichOneof("event") == "llm_token" and "llm_token" not in await stored_kinds(
            b, run_id
        ):
            tokens_before_stored += 1
    owner = await owner_run
    assert owner[-1].WhichOneof("event") == "final"
    assert_same_events(watched, owner)
    # Tokens are stored with the step's checkpoint, after the last of them: B had them live.
    assert tokens_before_stored >= 10, tokens_before_stored


async def test_cancel_through_another_gateway_stops_the_run_at_once(
    gateways: tuple[Stack, Stack, str],
) -> None:
    a, b, _ = gateways
    run_id, owner_run, seen = await started(a, "wait")
    await assert_eventually(lambda: "tool_start" in seen, timeout_s=30)
    began = time.monotonic()
    await b.agent.Cancel(agent_pb2.CancelRequest(run_id=run_id, user_id="ana"), timeout=30)
    owner = await asyncio.wait_for(owner_run, 50)
    stopped_after = time.monotonic() - began
    # The tool sleeps 60 s and its result is the run's next checkpoint (without live cancels the
    # owner learns of the Cancel from its lease, ~30 s later): it stopped at once.
    assert stopped_after < 10, stopped_after
    row = await a.gateway.manager.store.get_run(run_id)
    assert row is not None
    assert row.status.value == "cancelled"
    assert owner[-1].WhichOneof("event") in ("final", "error")


async def test_a_watcher_whose_listener_is_killed_still_gets_every_event(
    gateways: tuple[Stack, Stack, str],
) -> None:
    a, b, url = gateways
    run_id, owner_run, _ = await started(a, "talk")
    watched: list[agent_pb2.RunEvent] = []
    killed = False
    async for response in watch(b, run_id):
        watched.append(response.event)
        tokens = sum(e.WhichOneof("event") == "llm_token" for e in watched)
        if tokens >= 5 and not killed:
            killed = True
            conn = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
            try:
                ended = await conn.fetch(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
                    APPLICATION_NAME,
                )
            finally:
                await conn.close()
            assert ended, "no live-events connection to kill"
    owner = await owner_run
    assert killed
    assert_same_events(watched, owner)


async def test_many_watchers_attaching_at_once_all_follow_live(gateways: tuple[Stack, Stack, str]) -> None:
    a, b, _ = gateways
    runs = [await started(a, "talk") for _ in range(6)]

    async def tokens_seen_live(run_id: str) -> int:
        live = 0
        async for response in watch(b, run_id):
            if response.event.WhichOneof("event") == "llm_token" and "llm_token" not in await stored_kinds(
                b, run_id
            ):
                live += 1
        return live

    counts = await asyncio.gather(*(tokens_seen_live(run_id) for run_id, _, _ in runs))
    for _, task, _ in runs:
        await task
    assert min(counts) >= 10, counts


async def test_an_owner_publishes_a_run_only_once_a_watcher_asks(gateways: tuple[Stack, Stack, str]) -> None:
    """Nobody watching from elsewhere: no notification per event; a Watch on B starts them, live."""
    a, b, url = gateways
    run_id, owner_run, seen = await started(a, "talk")
    received: list[str] = []
    listener = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://", 1))
    try:
        await listener.add_listener(run_channel(run_id), lambda *args: received.append(args[-1]))
        await assert_eventually(lambda: seen.count("llm_token") >= 5, timeout_s=10)
        await asyncio.sleep(0.3)
        assert received == [], "the owner published events nobody asked for"
        watched = [response.event async for response in watch(b, run_id)]
        owner = await owner_run
        assert_same_events(watched, owner)
        assert any(payload.startswith("E") for payload in received), received[:3]
    finally:
        await listener.close()
