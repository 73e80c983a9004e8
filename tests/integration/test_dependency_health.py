"""The gateway's health tells the truth about its dependencies, credentials included, and says why.

A gateway whose AGENTLOOP_SERVICE_TOKEN is missing or differs from the Reasoner's
and the ToolService's reaches them, and their grpc.health.v1 (open to everyone)
says SERVING, yet every call of every run is refused UNAUTHENTICATED. Its own
health must then be NOT_SERVING, with the reason in the answer and in the log.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from agentloop.cli.main import health
from agentloop.kernel.security import service_authenticator
from agentloop.kernel.serving import HEALTH_REASON_KEY
from agentloop.kernel.settings import GatewaySettings, ReasonerSettings, ToolSettings
from agentloop.scripted_model import Script, ScriptedModelServer
from agentloop.v1 import agent_pb2, agent_pb2_grpc
from gateway.api.server import Gateway
from gateway.api.server import create_server as create_gateway
from reasoner_svc.service import create_server as create_reasoner
from tests.support.waiting import assert_eventually
from tool_svc.builtins import default_registry
from tool_svc.service import create_server as create_tools

pytestmark = pytest.mark.integration

TOKEN = "the-services-token"


@dataclasses.dataclass
class Services:
    model: ScriptedModelServer
    gateway: Gateway

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.gateway.port}"


@contextlib.asynccontextmanager
async def services(gateway_token: str, tmp_path: Path) -> AsyncIterator[Services]:
    """Model, ToolService and Reasoner requiring TOKEN; a gateway sending `gateway_token`."""
    auth = service_authenticator(TOKEN)
    async with contextlib.AsyncExitStack() as stack:
        model = ScriptedModelServer(Script())
        await model.start()
        stack.push_async_callback(model.stop)
        tools = await create_tools(
            dataclasses.replace(ToolSettings(), port=0), default_registry(ToolSettings()), authenticator=auth
        )
        stack.push_async_callback(tools.aclose, 0)
        reasoner_settings = dataclasses.replace(
            ReasonerSettings(), port=0, base_url=model.base_url, max_retries=0
        )
        reasoner = await create_reasoner(reasoner_settings, authenticator=auth)
        stack.push_async_callback(reasoner.aclose, 0)
        settings = dataclasses.replace(
            GatewaySettings(),
            port=0,
            reasoner_addr=f"127.0.0.1:{reasoner.port}",
            tools_addr=f"127.0.0.1:{tools.port}",
            database_url=f"sqlite+aiosqlite:///{tmp_path / 'agentloop.db'}",
            health_interval_s=0.1,
            rpc_backoff_s=0.01,
        )
        gateway = await create_gateway(settings, service_token=gateway_token)
        stack.push_async_callback(gateway.aclose, 0)
        yield Services(model, gateway)


async def _checked(addr: str) -> tuple[int, str]:
    """The gateway's overall health over the wire, and the reason it gives."""
    async with grpc.aio.insecure_channel(addr) as channel:
        call = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
        reply = await call
        reason = dict(await call.trailing_metadata() or ()).get(HEALTH_REASON_KEY, "")
    return reply.status, str(reason)


@pytest.mark.parametrize("gateway_token", ["not-the-token", ""], ids=["wrong-token", "no-token"])
async def test_a_gateway_its_dependencies_refuse_is_not_serving_and_says_why(
    gateway_token: str, tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.WARNING, logger="gateway.api.health")
    async with services(gateway_token, tmp_path) as up:
        await assert_eventually(
            lambda: up.gateway.health.status == {"reasoner": False, "tools": False, "store": True}
        )
        status, reason = await _checked(up.addr)
        assert status == health_pb2.HealthCheckResponse.NOT_SERVING
        assert reason == (
            "reasoner refuses the gateway's credentials (UNAUTHENTICATED); "
            "tools refuses the gateway's credentials (UNAUTHENTICATED)"
        )
        assert await health(up.addr, "reasoner", 5) == 1
        assert capsys.readouterr().out.strip() == (
            f"{up.addr}: NOT_SERVING (refuses the gateway's credentials (UNAUTHENTICATED))"
        )
        # What the health says is what runs meet.
        async with grpc.aio.insecure_channel(up.addr) as channel:
            with pytest.raises(grpc.aio.AioRpcError) as failed:
                await agent_pb2_grpc.AgentStub(channel).Invoke(
                    agent_pb2.InvokeRequest(input="hi"), timeout=30
                )
        assert failed.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert up.model.request_count == 0  # the probe never reached the model
    logged = [r.getMessage() for r in caplog.records if r.name == "gateway.api.health"]
    told = "invalid bearer token" if gateway_token else "missing bearer token"
    for dependency, call in (("reasoner", "Step"), ("tools", "ListTools")):
        line = next(m for m in logged if m.startswith(f"dependency {dependency} is unhealthy: "))
        assert f"refuses the gateway's credentials (UNAUTHENTICATED): {call}: {told}" in line
        assert "AGENTLOOP_SERVICE_TOKEN" in line
    assert len(logged) == 2, "a reason that does not change is logged once"


async def test_with_the_right_token_the_gateway_serves_and_the_probe_costs_no_model_call(
    tmp_path: Path,
) -> None:
    async with services(TOKEN, tmp_path) as up:
        await assert_eventually(
            lambda: up.gateway.health.status == {"reasoner": True, "tools": True, "store": True}
        )
        await up.gateway.health.check_once()  # the authenticated probes once more, certainly
        assert await _checked(up.addr) == (health_pb2.HealthCheckResponse.SERVING, "")
        assert up.model.request_count == 0
        async with grpc.aio.insecure_channel(up.addr) as channel:
            reply = await agent_pb2_grpc.AgentStub(channel).Invoke(
                agent_pb2.InvokeRequest(input="hi"), timeout=30
            )
        assert reply.final.final_reply
