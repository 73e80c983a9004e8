"""Every service starts and stops through agentloop.kernel.serving.Server, in one order.

Closing: health says NOT_SERVING, in-flight calls drain, then what the service opened
closes newest first. A start that fails part way closes what it had already opened.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from agentloop.kernel.serving import PortInUse, Server
from agentloop.kernel.settings import GatewaySettings, ToolSettings
from gateway.api.server import create_server as create_gateway
from gateway.store.base import Store
from gateway.store.factory import open_store
from tool_svc.service import create_server as create_tools

pytestmark = pytest.mark.integration

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


async def _status(server: Server) -> int:
    """The server's own health as its servicer holds it (also once the port is closed)."""
    response = await server.handle.health.Check(health_pb2.HealthCheckRequest(service=""), None)
    return int(response.status)


async def _answers(port: int) -> bool:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        try:
            await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=1)
        except grpc.aio.AioRpcError:
            return False
        return True


async def test_closing_stops_serving_then_closes_resources_newest_first() -> None:
    seen: list[tuple[str, int, bool]] = []
    async with Server().starting() as server:
        for name in ("opened first", "opened second"):

            async def close(name: str = name) -> None:
                seen.append((name, await _status(server), await _answers(server.port)))

            server.resources.push_async_callback(close)
        await server.listen(lambda _: None, [], port=0)
    assert await _status(server) == SERVING
    assert await _answers(server.port)

    async with server:
        pass
    assert seen == [("opened second", NOT_SERVING, False), ("opened first", NOT_SERVING, False)]
    await server.aclose()  # a second close does nothing
    assert len(seen) == 2


async def _open_then_listen(port: int, closed: list[str]) -> Server:
    async with Server().starting() as server:
        server.resources.callback(closed.append, "client")
        await server.listen(lambda _: None, [], port=port)
    return server


async def test_a_start_that_fails_closes_what_it_opened() -> None:
    async with await create_tools(dataclasses.replace(ToolSettings(), port=0)) as holder:
        closed: list[str] = []
        with pytest.raises(PortInUse):
            await _open_then_listen(holder.port, closed)
        assert closed == ["client"]
        assert await _answers(holder.port)


async def _recording_store(path: Path, log: list[str]) -> Store:
    """A SQLite store that notes when the gateway releases its runs and when it closes the store."""
    store = await open_store(f"sqlite+aiosqlite:///{path / 'agentloop.db'}")
    real_release, real_close = store.release, store.close

    async def release(owner: str) -> int:
        log.append("runs released")
        return await real_release(owner)

    async def close() -> None:
        log.append("store closed")
        await real_close()

    store.release = release  # type: ignore[method-assign]
    store.close = close  # type: ignore[method-assign]
    return store


async def test_a_gateway_that_cannot_listen_closes_its_store(tmp_path: Path) -> None:
    log: list[str] = []
    store = await _recording_store(tmp_path, log)
    async with await create_tools(dataclasses.replace(ToolSettings(), port=0)) as holder:
        settings = dataclasses.replace(GatewaySettings(), port=holder.port)
        with pytest.raises(PortInUse):
            await create_gateway(settings, store=store)
    assert log[-1] == "store closed"


async def test_a_gateway_hands_its_runs_over_before_it_closes_its_store(tmp_path: Path) -> None:
    log: list[str] = []
    gateway = await create_gateway(
        dataclasses.replace(GatewaySettings(), port=0), store=await _recording_store(tmp_path, log)
    )
    async with gateway:
        assert await _answers(gateway.port)
    assert log == ["runs released", "store closed"]
    assert not await _answers(gateway.port)
