"""What clients see when a run changes hands: after kill -9, a frozen owner, a database outage.

Gateways run as subprocesses (killed with SIGKILL, frozen with SIGSTOP) over
the in-process model, reasoner and ToolService of `tests.support.stack`, on
both stores; the outage is a real Postgres behind a proxy that is cut.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import AsyncIterator

import grpc
import pytest

from agentloop.kernel.errors import status_from_metadata
from agentloop.v1 import agent_pb2, agent_pb2_grpc
from gateway.store.base import RunStatus
from gateway.store.sql import SqlStore
from tests.integration.test_crash_resume import (
    CRASH_POINTS,
    SCRIPT,
    gateway_process,
    kill,
    run_until,
    watch_to_end,
)
from tests.integration.test_faults_e2e import FlakyProxy
from tests.support.postgres import fresh_postgres_database
from tests.support.stack import Stack, final_of, start_stack
from tests.support.tools import Probe, make_registry, probed_stack

pytestmark = pytest.mark.integration


@pytest.fixture
async def stack_and_probe(database_url: str) -> AsyncIterator[tuple[Stack, Probe]]:
    async with probed_stack(SCRIPT, database_url=database_url) as stack_and_probe:
        yield stack_and_probe


def open_calls(events: list[agent_pb2.RunEvent]) -> set[str]:
    """Tool calls a client saw start but not end."""
    started = {e.tool_start.tool_call_id for e in events if e.WhichOneof("event") == "tool_start"}
    ended = {e.tool_end.tool_call_id for e in events if e.WhichOneof("event") == "tool_end"}
    return started - ended


async def watch_from(port: int, run_id: str, after: int) -> list[agent_pb2.RunEvent]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = agent_pb2_grpc.AgentStub(channel).Watch(
            agent_pb2.WatchRequest(run_id=run_id, user_id="ana", after_sequence=after), timeout=30
        )
        return [r.event async for r in call]


async def test_numbers_seen_before_a_kill_are_never_reused(
    stack_and_probe: tuple[Stack, Probe], database_url: str
) -> None:
    stack, _ = stack_and_probe
    fast_ended = CRASH_POINTS["during_tools"]
    observed: list[agent_pb2.RunEvent] = []

    def slow_call_open_after_fast_ended(event: agent_pb2.RunEvent) -> bool:
        # Kill while a call is running: the fast call has ended and the slow one has started
        # (their start events may arrive in either order on a loaded machine).
        observed.append(event)
        return any(fast_ended(e) for e in observed) and bool(open_calls(observed))

    with gateway_process(stack, database_url, "gw-numbers-1") as first:
        seen = await run_until(first.port, slow_call_open_after_fast_ended)
        kill(first)
    run_id = seen[0].run_id
    assert open_calls(seen), "the kill should come while a call is running"

    with gateway_process(stack, database_url, "gw-numbers-2") as second:
        stored = await asyncio.wait_for(watch_to_end(second.port, run_id), 30)
        resumed_tail = await asyncio.wait_for(watch_from(second.port, run_id, seen[-1].sequence), 30)
    assert final_of(stored).final_reply == "All counted: counted step-2."
    numbers = [e.sequence for e in stored]
    assert numbers == sorted(set(numbers)), "numbers repeat or go back"
    by_number = {e.sequence: e for e in stored}
    for event in seen:
        # A number the client saw means that same event, or nothing (a gap): never another event.
        assert by_number.get(event.sequence, event) == event, f"number {event.sequence} was reused"
    lost = [e.sequence for e in seen if e.sequence not in by_number]
    assert lost, "events after the last checkpoint were lost with the gateway: they must leave a gap"
    resumed = [
        e
        for e in stored
        if e.WhichOneof("event") == "decision" and e.decision.kind == agent_pb2.DECISION_KIND_RESUMED
    ]
    assert len(resumed) == 1
    assert f"events {min(lost)}.." in resumed[0].decision.detail
    assert resumed[0].sequence > max(e.sequence for e in seen)
    # Resuming Watch from its last number, the client gets an end for every call it saw start.
    assert open_calls(seen) <= {
        e.tool_end.tool_call_id for e in resumed_tail if e.WhichOneof("event") == "tool_end"
    }
    assert final_of(resumed_tail) == final_of(stored)


async def test_a_client_of_a_frozen_owner_follows_the_run_to_its_real_end(
    stack_and_probe: tuple[Stack, Probe], database_url: str
) -> None:
    stack, _ = stack_and_probe
    seen: list[agent_pb2.RunEvent] = []
    with gateway_process(stack, database_url, "gw-frozen") as frozen:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{frozen.port}") as channel:
            call = agent_pb2_grpc.AgentStub(channel).Run(
                agent_pb2.RunRequest(input="crash test", user_id="ana"), timeout=60
            )
            stream = call.__aiter__()
            while not CRASH_POINTS["during_tools"](seen[-1] if seen else agent_pb2.RunEvent()):
                seen.append((await stream.__anext__()).event)
            os.kill(frozen.proc.pid, signal.SIGSTOP)
            try:
                with gateway_process(stack, database_url, "gw-thaw") as other:
                    elsewhere = await asyncio.wait_for(watch_to_end(other.port, seen[0].run_id), 30)
                    assert final_of(elsewhere).final_reply == "All counted: counted step-2."
            finally:
                os.kill(frozen.proc.pid, signal.SIGCONT)
            async for response in stream:
                seen.append(response.event)
    # The frozen gateway lost its lease; its client still gets the run's real end.
    assert seen[-1].WhichOneof("event") == "final", seen[-1]
    assert final_of(seen) == final_of(elsewhere)
    numbers = [e.sequence for e in seen]
    assert numbers == sorted(set(numbers))


# --- the database gone longer than the retry budget ---------------------------------


LEASE_S = 20.0


@pytest.fixture
async def postgres_behind_proxy() -> AsyncIterator[tuple[str, str, FlakyProxy]]:
    """A fresh Postgres database: its direct URL, and its URL through a proxy the test can cut."""
    from sqlalchemy import make_url

    async with fresh_postgres_database() as direct_url:
        url = make_url(direct_url)
        proxy = FlakyProxy(url.host or "127.0.0.1", url.port or 5432)
        await proxy.start()
        try:
            proxied = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
            yield direct_url, proxied, proxy
        finally:
            await proxy.close()


async def _drain_into(call: AsyncIterator[agent_pb2.RunResponse], seen: list[agent_pb2.RunEvent]) -> None:
    async for response in call:
        seen.append(response.event)


async def test_a_run_outliving_the_store_retry_budget_finishes_once_the_database_is_back(
    postgres_behind_proxy: tuple[str, str, FlakyProxy],
) -> None:
    direct_url, url, proxy = postgres_behind_proxy
    registry, probe = make_registry()
    # A lease longer than the outage, as in production: nothing but the gateway letting go of the
    # run (no renewal after its store writes gave up) can make it an orphan after the outage.
    overrides = {"lease_s": LEASE_S, "orphan_scan_s": 0.2, "store_retry_budget_s": 1.0}
    stack = await start_stack(SCRIPT, registry, database_url=url, gateway_overrides=overrides)
    direct = SqlStore(direct_url)
    seen: list[agent_pb2.RunEvent] = []
    try:
        call = stack.agent.Run(agent_pb2.RunRequest(input="crash test", user_id="ana"), timeout=60)
        async for response in call:
            seen.append(response.event)
            if CRASH_POINTS["during_tools"](response.event):
                # The slow call finishes during the outage; recording it outlasts the budget.
                proxy.cut()
                break
        # The run has not failed, so no error event says it did: the stream ends UNAVAILABLE, with
        # RetryInfo, once following the run from the store outlasts the budget too.
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await _drain_into(call, seen)
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "database is unavailable" in (info.value.details() or "")
        details = status_from_metadata(info.value.trailing_metadata() or ()).details
        assert any(d.type_url.endswith("google.rpc.RetryInfo") for d in details)
        assert [e for e in seen if e.WhichOneof("event") in ("final", "error")] == []
        await asyncio.sleep(1.0)  # the outage goes on past the retry budget
        proxy.restore()
        run_id = seen[0].run_id
        # The client reattaches where it left off and sees the run's real ending.
        request = agent_pb2.WatchRequest(run_id=run_id, user_id="ana", after_sequence=seen[-1].sequence)
        rest = [r.event async for r in stack.agent.Watch(request, timeout=LEASE_S * 3)]
        assert final_of(rest).final_reply == "All counted: counted step-2."

        deadline = time.monotonic() + LEASE_S * 3
        while (run := await direct.get_run(run_id)) is None or run.status is RunStatus.RUNNING:
            assert time.monotonic() < deadline, f"the run never ended after the database came back: {run}"
            await asyncio.sleep(0.1)
        assert run.status is RunStatus.COMPLETED
        stored = await direct.events(run_id, 0)
        assert final_of(stored).final_reply == "All counted: counted step-2."
        numbers = [e.sequence for e in stored]
        assert numbers == sorted(set(numbers))
        assert probe.finished["step-2"] == 1
    finally:
        with contextlib.suppress(Exception):
            proxy.restore()
        await direct.close()
        await stack.close()


async def test_a_queued_run_whose_client_left_during_an_outage_is_cancelled_once_the_database_is_back(
    postgres_behind_proxy: tuple[str, str, FlakyProxy],
) -> None:
    """A QUEUED run has no lease: if the gateway gave up ending it, nothing else ever would."""
    direct_url, url, proxy = postgres_behind_proxy
    registry, _ = make_registry()
    overrides = {"lease_s": LEASE_S, "orphan_scan_s": 0.2, "store_retry_budget_s": 0.5}
    stack = await start_stack(SCRIPT, registry, database_url=url, gateway_overrides=overrides)
    direct = SqlStore(direct_url)
    thread = "t-queued-outage"
    try:
        first = stack.agent.Run(
            agent_pb2.RunRequest(input="crash test", user_id="ana", thread_id=thread), timeout=60
        )
        async for response in first:
            if CRASH_POINTS["during_tools"](response.event):
                break
        queued = stack.agent.Run(
            agent_pb2.RunRequest(
                input="hello",
                user_id="ana",
                thread_id=thread,
                options=agent_pb2.RunOptions(concurrency=agent_pb2.CONCURRENCY_POLICY_ENQUEUE),
            ),
            timeout=60,
        )
        deadline = time.monotonic() + 10
        while not (
            waiting := [
                r for r in await direct.list_runs(thread, 10, user_id="ana") if r.status is RunStatus.QUEUED
            ]
        ):
            assert time.monotonic() < deadline, "the second run was never queued"
            await asyncio.sleep(0.02)
        proxy.cut()
        queued.cancel()  # the client leaves; its gateway cannot reach the database to end the run
        first.cancel()
        await asyncio.sleep(1.5)  # three times the retry budget
        assert (await direct.get_run(waiting[0].run_id)).status is RunStatus.QUEUED  # type: ignore[union-attr]
        proxy.restore()

        deadline = time.monotonic() + 15
        while (run := await direct.get_run(waiting[0].run_id)) is None or run.status is RunStatus.QUEUED:
            assert time.monotonic() < deadline, (
                f"the queued run never ended after the database came back: {run}"
            )
            await asyncio.sleep(0.1)
        assert run.status is RunStatus.CANCELLED
    finally:
        with contextlib.suppress(Exception):
            proxy.restore()
        await direct.close()
        await stack.close()


async def test_invoke_on_a_frozen_owner_answers_with_the_real_outcome(
    stack_and_probe: tuple[Stack, Probe], database_url: str
) -> None:
    stack, _ = stack_and_probe
    with gateway_process(stack, database_url, "gw-frozen-invoke") as frozen:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{frozen.port}") as channel:
            agent = agent_pb2_grpc.AgentStub(channel)
            request = agent_pb2.InvokeRequest(input="crash test", user_id="ana", thread_id="t-frozen-invoke")
            invoke = asyncio.ensure_future(agent.Invoke(request, timeout=60))
            thread = agent_pb2.GetThreadRequest(thread_id="t-frozen-invoke", user_id="ana")
            deadline = time.monotonic() + 30
            while True:
                with contextlib.suppress(grpc.aio.AioRpcError):
                    run_id = (await agent.GetThread(thread, timeout=5)).state.run_id
                    if run_id:
                        break
                assert time.monotonic() < deadline
                await asyncio.sleep(0.02)
            watch = agent.Watch(agent_pb2.WatchRequest(run_id=run_id, user_id="ana"), timeout=30)
            async for response in watch:
                if CRASH_POINTS["during_tools"](response.event):
                    break
            watch.cancel()
            os.kill(frozen.proc.pid, signal.SIGSTOP)
            try:
                with gateway_process(stack, database_url, "gw-thaw-invoke") as other:
                    elsewhere = await asyncio.wait_for(watch_to_end(other.port, run_id), 30)
            finally:
                os.kill(frozen.proc.pid, signal.SIGCONT)
            answer = await invoke
    assert answer.final == final_of(elsewhere)
    assert answer.final.final_reply == "All counted: counted step-2."
    assert answer.run_id == run_id
