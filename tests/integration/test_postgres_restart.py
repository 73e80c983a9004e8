"""A real Postgres restarted under the gateway: clients wait a moment, never hear a failure that was not.

The gateway's database is a private cluster of this test (never the shared
server), restarted with `pg_ctl restart` while runs are in flight: `fast`
(every session is terminated, AdminShutdownError) and `immediate` (a crash:
the server recovers, answering "the database system is starting up"
meanwhile). Then restarted while the gateway is idle, its pool full of
connections the restart killed.

What must hold:

- no request is answered INTERNAL: a database that is coming back is
  retried within the store's budget (AGENTLOOP_STORE_RETRY_BUDGET_S), past
  it UNAVAILABLE with RetryInfo;
- every `error` event a client saw is stored, and is its run's stored
  ending: a run the restart interrupted is not reported failed (it goes on
  from its last checkpoint);
- every run ends.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import grpc
import pytest
from google.rpc import code_pb2
from sqlalchemy import NullPool, select
from sqlalchemy.ext.asyncio import create_async_engine

from agentloop.kernel.errors import status_from_metadata
from agentloop.scripted_model import Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2
from gateway.store import tables
from tests.support.postgres import PrivateCluster, private_cluster
from tests.support.stack import Stack, start_stack
from tests.support.tools import make_registry
from tests.support.waiting import assert_eventually

pytestmark = pytest.mark.integration

SCRIPT = Script(
    scenarios=(
        Scenario(
            match="work",
            turns=(
                Turn(tool_calls=(ScriptedToolCall("sleep_for", {"seconds": 0.05}),)),
                Turn(content="Done: {{tool:sleep_for}}."),
            ),
        ),
    )
)
CLIENTS = 16
RESTARTS = ("fast", "immediate", "fast", "immediate", "fast")


@dataclass
class Seen:
    """What the clients were told."""

    answers: Counter[str] = field(default_factory=Counter)
    """Each request's outcome: OK, or the gRPC status code it failed with."""
    errors: list[agent_pb2.RunEvent] = field(default_factory=list)
    """Every `error` event a Run stream delivered."""
    failed_invokes: list[tuple[str, str]] = field(default_factory=list)
    """(code, message) of every Invoke answered with a failure."""
    without_retry_info: list[str] = field(default_factory=list)
    """UNAVAILABLE answers that did not say when to retry."""
    runs: set[str] = field(default_factory=set)


@pytest.fixture
async def cluster() -> AsyncIterator[PrivateCluster]:
    async with private_cluster() as cluster:
        yield cluster


async def _gateway_on(cluster: PrivateCluster) -> Stack:
    return await start_stack(
        SCRIPT,
        make_registry()[0],
        database_url=cluster.url,
        gateway_overrides={"lease_s": 3.0, "orphan_scan_s": 0.5},
    )


def _record_failure(seen: Seen, exc: grpc.aio.AioRpcError) -> None:
    seen.answers[exc.code().name] += 1
    if exc.code() == grpc.StatusCode.UNAVAILABLE:
        status = status_from_metadata(exc.trailing_metadata() or ())
        if not any(d.type_url.endswith("google.rpc.RetryInfo") for d in status.details):
            seen.without_retry_info.append(exc.details() or "")


async def _one_run(stack: Stack, seen: Seen, n: int) -> None:
    user = f"u{n % 4}"
    try:
        if n % 2:
            answer = await stack.agent.Invoke(
                agent_pb2.InvokeRequest(input=f"work {n}", user_id=user), timeout=60
            )
            seen.runs.add(answer.run_id)
        else:
            request = agent_pb2.RunRequest(input=f"work {n}", user_id=user)
            async for response in stack.agent.Run(request, timeout=60):
                seen.runs.add(response.event.run_id)
                if response.event.WhichOneof("event") == "error":
                    seen.errors.append(response.event)
        seen.answers["OK"] += 1
    except grpc.aio.AioRpcError as exc:
        if n % 2:
            seen.failed_invokes.append((exc.code().name, exc.details() or ""))
        _record_failure(seen, exc)


async def _stored_endings(url: str) -> tuple[dict[str, str], dict[tuple[str, int], bytes], dict[str, int]]:
    """Each run's status, every stored event's bytes by (run, sequence), each run's last stored number."""
    engine = create_async_engine(url, poolclass=NullPool)
    try:
        async with engine.connect() as conn:
            runs = dict((await conn.execute(select(tables.runs.c.run_id, tables.runs.c.status))).all())
            rows = (
                await conn.execute(
                    select(tables.run_events.c.run_id, tables.run_events.c.sequence, tables.run_events.c.data)
                )
            ).all()
    finally:
        await engine.dispose()
    events = {(run_id, sequence): data for run_id, sequence, data in rows}
    last: dict[str, int] = {}
    for run_id, sequence in events:
        last[run_id] = max(last.get(run_id, 0), sequence)
    return runs, events, last


def _unstored_errors(
    seen: Seen, statuses: dict[str, str], events: dict[tuple[str, int], bytes], last: dict[str, int]
) -> list[str]:
    """Error events a client saw that are not their run's stored ending."""
    wrong: list[str] = []
    for event in seen.errors:
        key = (event.run_id, event.sequence)
        if events.get(key) != event.SerializeToString():
            wrong.append(f"run {event.run_id}: error {event.sequence} was never stored")
        elif last.get(event.run_id) != event.sequence or statuses.get(event.run_id) != "failed":
            wrong.append(f"run {event.run_id}: error {event.sequence} is not its ending")
    return wrong


async def _all_runs_ended(url: str) -> bool:
    statuses, _, _ = await _stored_endings(url)
    return all(status not in ("queued", "running") for status in statuses.values())


async def test_a_postgres_restart_during_a_burst_of_runs_answers_no_internal_and_no_unstored_error(
    cluster: PrivateCluster,
) -> None:
    stack = await _gateway_on(cluster)
    seen = Seen()
    stop = asyncio.Event()
    started = iter(range(1_000_000))

    async def client() -> None:
        while not stop.is_set():
            await _one_run(stack, seen, next(started))

    try:
        clients = [asyncio.create_task(client()) for _ in range(CLIENTS)]
        for mode in RESTARTS:
            await assert_eventually(lambda: len(seen.runs) >= 20, timeout_s=60, message="no runs going")
            seen.runs.clear()
            await asyncio.to_thread(cluster.restart, mode)
        await assert_eventually(lambda: len(seen.runs) >= 20, timeout_s=60, message="no runs after")
        stop.set()
        await asyncio.gather(*clients)
        deadline = time.monotonic() + 60
        while not await _all_runs_ended(cluster.url):
            assert time.monotonic() < deadline, "runs left unended"
            await asyncio.sleep(0.2)
        statuses, events, last = await _stored_endings(cluster.url)
    finally:
        stop.set()
        await stack.close()

    unstored = _unstored_errors(seen, statuses, events, last)
    total = sum(seen.answers.values())
    print(
        f"\nrestarts {len(RESTARTS)}, requests {total}, runs {len(statuses)}, answers {dict(seen.answers)}, "
        f"error events seen {len(seen.errors)}, of which not the stored ending {len(unstored)}: "
        f"{[(e.error.code, e.error.message) for e in seen.errors]}"
    )
    assert seen.answers["INTERNAL"] == 0, seen.failed_invokes[:5]
    assert unstored == []
    # Nor did a restart make a run fail: whatever error a run ended with is not the database's.
    assert [e.error.message for e in seen.errors if e.error.code == code_pb2.INTERNAL] == []
    assert [f for f in seen.failed_invokes if "run failed" in f[1]] == []
    assert seen.without_retry_info == []
    assert seen.answers["OK"] > 0
    assert set(seen.answers) <= {"OK", "UNAVAILABLE"}, seen.answers


async def test_the_first_request_after_an_idle_restart_is_answered(cluster: PrivateCluster) -> None:
    stack = await _gateway_on(cluster)
    seen = Seen()
    try:
        # Fill the pool: these connections all die with each restart.
        await asyncio.gather(*(_one_run(stack, seen, n) for n in range(12)))
        for i, mode in enumerate(("fast", "immediate", "fast", "immediate", "fast")):
            idle_since = time.monotonic()
            await asyncio.sleep(0.2 if i % 2 else 2.5)  # under and over the pool's idle ping
            await asyncio.to_thread(cluster.restart, mode)
            assert time.monotonic() - idle_since > 0.2
            await _one_run(stack, seen, 2 * i + 1)  # an Invoke
            await _one_run(stack, seen, 2 * i)  # a streamed Run
    finally:
        await stack.close()
    print(f"\nidle restarts 5, answers {dict(seen.answers)}, failed Invokes {seen.failed_invokes[:3]}")
    assert seen.failed_invokes == []
    assert seen.errors == []
    assert seen.answers == Counter({"OK": 22}), seen.answers
