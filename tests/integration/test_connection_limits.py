"""What one client may hold of a server: connections, calls, run slots; the others still get served.

Through the real services: idle TCP connections (silent ones, and ones that
open HTTP/2 and never call) are closed by the gateway while a client completes
runs; connections beyond the cap are closed as soon as accepted; calls beyond
an address's share are refused while another address is served; one caller
flooding runs gets its share of the run slots and no more, by its user with
authentication, by its address without.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from collections.abc import AsyncIterator, Sequence

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from agentloop.kernel.security import Authenticator
from agentloop.kernel.settings import GATEWAY_LIMITS, ServerLimits
from agentloop.scripted_model import Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2, agent_pb2_grpc
from bench.idle_flood import Held, hold_many
from tests.support.stack import Stack, final_of, start_stack
from tests.support.tools import make_registry
from tests.support.waiting import assert_eventually

pytestmark = pytest.mark.integration

SCRIPT = Script(
    scenarios=(
        Scenario(
            match="slow",
            turns=(Turn(tool_calls=(ScriptedToolCall("sleep_for", {"seconds": 30}),)), Turn(content="done")),
        ),
        Scenario(match="", turns=(Turn(content="hello back"),)),
    )
)


def _limits(**fields: float) -> ServerLimits:
    return dataclasses.replace(GATEWAY_LIMITS, **fields)


async def _run_once(channel: grpc.aio.Channel, metadata: Sequence[tuple[str, str]] = ()) -> str:
    stub = agent_pb2_grpc.AgentStub(channel)
    reply = await stub.Invoke(agent_pb2.InvokeRequest(input="hello"), metadata=metadata, timeout=30)
    return str(reply.final.final_reply)


@pytest.fixture
async def release() -> AsyncIterator[asyncio.Event]:
    """Set at the end of a test: whatever idle connection a test still holds is closed."""
    event = asyncio.Event()
    yield event
    event.set()


async def test_idle_connections_are_closed_while_a_client_completes_runs(release: asyncio.Event) -> None:
    limits = _limits(handshake_timeout_s=1.0, connection_idle_s=2.0)
    stack = await start_stack(SCRIPT, make_registry()[0], gateway_overrides={"limits": limits})
    try:
        flood = asyncio.ensure_future(hold_many("127.0.0.1", stack.gateway.port, 300, release))
        assert final_of(await stack.run("hello")).final_reply == "hello back"  # during the flood
        held: list[Held] = await asyncio.wait_for(flood, 60)  # every one closed by the gateway
    finally:
        release.set()
        await stack.close()
    assert all(h.connected_at is not None for h in held), "the gateway refused a connection under its cap"
    # Silent ones at the handshake timeout, those that opened HTTP/2 and never called at the idle one.
    assert [h for h in held if h.closed_at is None] == []
    assert sum(h.speaks_http2 for h in held) == 150


async def test_connections_beyond_the_cap_are_closed_as_soon_as_accepted(release: asyncio.Event) -> None:
    cap = 40
    limits = _limits(max_connections=cap, handshake_timeout_s=120.0, connection_idle_s=120.0)
    stack = await start_stack(SCRIPT, make_registry()[0], gateway_overrides={"limits": limits})
    held: list[Held] = []
    try:
        assert final_of(await stack.run("hello")).final_reply == "hello back"  # the client is connected
        flood = asyncio.ensure_future(hold_many("127.0.0.1", stack.gateway.port, 200, release, into=held))
        # 200 connections against a cap of 40, one of which the client holds: the others are closed
        # as soon as they are accepted, long before either timeout (two minutes each here).
        await assert_eventually(lambda: len(_closed(held)) >= 200 - (cap - 1), timeout_s=30)
        assert final_of(await stack.run("hello")).final_reply == "hello back"  # the connected client
        open_now = [h for h in held if h.connected_at is not None and h.closed_at is None]
        assert len(open_now) <= cap - 1
        release.set()
        await asyncio.wait_for(flood, 30)
    finally:
        release.set()
        await stack.close()


def _closed(held: Sequence[Held]) -> list[Held]:
    """The connections the server closed (a refused connect counts: it never held one)."""
    return [h for h in held if h.closed_at is not None or h.error]


# --- calls per address and in all ------------------------------------------------------------


def _reason(exc: grpc.aio.AioRpcError) -> str:
    """The ErrorInfo reason of a failed call."""
    status = rpc_status.from_call(exc)
    assert status is not None, f"{exc.code().name} without details: {exc.details()}"
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return str(info.reason)
    raise AssertionError(f"no ErrorInfo in {status}")


async def _watching(channel: grpc.aio.Channel) -> grpc.aio.UnaryStreamCall:
    """A health Watch in flight on `channel` (its first answer read): a call that stays open."""
    call = health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest(service=""))
    await call.read()
    return call


async def _check(channel: grpc.aio.Channel) -> None:
    await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""), timeout=10)


async def _dual_stack(**overrides: object) -> Stack:
    """A gateway on every address, IPv4 and IPv6, so 127.0.0.1 and ::1 are two client addresses."""
    return await start_stack(SCRIPT, make_registry()[0], gateway_overrides={"host": "[::]", **overrides})


@pytest.fixture
async def dual_stack() -> AsyncIterator[Stack]:
    stack = await _dual_stack(limits=_limits(max_calls_per_peer=3, max_calls=5))
    try:
        yield stack
    finally:
        await stack.close()


async def test_calls_beyond_an_address_share_are_refused_while_another_address_is_served(
    dual_stack: Stack,
) -> None:
    port = dual_stack.gateway.port
    async with (
        grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ipv4,
        grpc.aio.insecure_channel(f"[::1]:{port}") as ipv6,
    ):
        watches = [await _watching(ipv4) for _ in range(3)]
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await _check(ipv4)
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert _reason(refused.value) == "TOO_MANY_CALLS_FROM_PEER"
        assert await _run_once(ipv6) == "hello back"  # another address is served meanwhile
        watches.pop().cancel()
        await assert_eventually(lambda: dual_stack.gateway.handle.calls.by_peer.get("127.0.0.1") == 2)
        await _check(ipv4)  # a place came free
        # Five calls in all at most: three from one address, two from the other fill the server.
        watches.append(await _watching(ipv4))
        watches.extend([await _watching(ipv6), await _watching(ipv6)])
        with pytest.raises(grpc.aio.AioRpcError) as full:
            await _check(ipv6)
        assert _reason(full.value) == "TOO_MANY_CALLS"
        for call in watches:
            call.cancel()


async def test_a_connection_carries_at_most_its_stream_limit_at_once() -> None:
    limits = _limits(max_streams_per_connection=2)
    stack = await start_stack(SCRIPT, make_registry()[0], gateway_overrides={"limits": limits})
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{stack.gateway.port}") as channel:
            first, second = await _watching(channel), await _watching(channel)
            third = health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest(service=""))
            answer = asyncio.ensure_future(third.read())
            done, _ = await asyncio.wait({answer}, timeout=1.0)
            assert not done, "a third call ran on a connection limited to two streams"
            first.cancel()
            await asyncio.wait_for(answer, 10)  # it starts once a stream is free
            second.cancel()
            third.cancel()
    finally:
        await stack.close()


# --- run slots between callers ---------------------------------------------------------------


async def _start_slow(stub: agent_pb2_grpc.AgentStub, user_id: str = "", token: str = "") -> str:
    """Start a run that sits in a 30 s tool: "started", or the reason it was refused."""
    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    call = stub.Run(agent_pb2.RunRequest(input="slow", user_id=user_id), metadata=metadata, timeout=60)
    try:
        async for response in call:
            if response.event.WhichOneof("event") == "tool_start":
                return "started"
    except grpc.aio.AioRpcError as exc:
        return _reason(exc)
    raise AssertionError("the slow run ended before its tool started")


async def test_one_user_flooding_runs_leaves_the_other_users_their_share(database_url: str) -> None:
    auth = Authenticator({"tok-ana": "ana", "tok-bob": "bob"})
    overrides = {"max_active_runs": 4}  # a share of 2 runs per caller
    stack = await start_stack(
        SCRIPT, make_registry()[0], gateway_overrides=overrides, authenticator=auth, database_url=database_url
    )
    try:
        agent = stack.agent
        flood = await asyncio.gather(*(_start_slow(agent, token="tok-ana") for _ in range(8)))
        assert Counter(flood) == {"started": 2, "TOO_MANY_RUNS_FOR_CALLER": 6}
        others = await asyncio.gather(*(_start_slow(agent, token="tok-bob") for _ in range(2)))
        assert others == ["started", "started"]
        assert await _start_slow(agent, token="tok-bob") == "TOO_MANY_RUNS"  # now the gateway is full
    finally:
        await stack.close()


async def test_without_authentication_the_share_is_the_client_address() -> None:
    stack = await _dual_stack(max_active_runs=4)
    port = stack.gateway.port
    try:
        async with (
            grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ipv4,
            grpc.aio.insecure_channel(f"[::1]:{port}") as ipv6,
        ):
            flooder, other = agent_pb2_grpc.AgentStub(ipv4), agent_pb2_grpc.AgentStub(ipv6)
            # Naming another user in each request does not make a client several callers.
            flood = await asyncio.gather(*(_start_slow(flooder, user_id=f"user-{i}") for i in range(6)))
            assert Counter(flood) == {"started": 2, "TOO_MANY_RUNS_FOR_CALLER": 4}
            others = await asyncio.gather(_start_slow(other, "ana"), _start_slow(other, "bob"))
            assert others == ["started", "started"]
    finally:
        await stack.close()
