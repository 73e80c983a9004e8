"""The whole agentloop stack in one test process, every hop over a real socket.

Scripted model (HTTP) ← Reasoner (gRPC) ← gateway (gRPC) → ToolService (gRPC),
each on an ephemeral loopback port. Tests script the model per test and talk
to the gateway through a real channel.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import grpc

from agentloop.scripted_model import Script, ScriptedModelServer
from agentloop.security import Authenticator, service_authenticator
from agentloop.serving import ServerHandle
from agentloop.settings import GatewaySettings, ReasonerSettings, ToolSettings
from agentloop.v1 import agent_pb2, agent_pb2_grpc, reasoner_pb2_grpc, tools_pb2_grpc
from gateway.service import AgentService, Gateway
from gateway.service import create_server as create_gateway
from gateway.store.base import Store
from reasoner_svc.service import create_server as create_reasoner
from tool_svc import ToolRegistry
from tool_svc.service import create_server as create_tools


@dataclass
class Stack:
    """Handles on every running part, plus stubs for the three services."""

    model: ScriptedModelServer
    tools: ServerHandle
    reasoner: ServerHandle
    gateway: Gateway
    channel: grpc.aio.Channel
    closers: list[Any]

    @property
    def agent_service(self) -> AgentService:
        return self.gateway.service

    @property
    def agent(self) -> agent_pb2_grpc.AgentStub:
        return agent_pb2_grpc.AgentStub(self.channel)

    @property
    def reasoner_stub(self) -> reasoner_pb2_grpc.ReasonerStub:
        return reasoner_pb2_grpc.ReasonerStub(self.channel_to(self.reasoner.port))

    @property
    def tools_stub(self) -> tools_pb2_grpc.ToolServiceStub:
        return tools_pb2_grpc.ToolServiceStub(self.channel_to(self.tools.port))

    def channel_to(self, port: int) -> grpc.aio.Channel:
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        self.closers.append(channel.close)
        return channel

    async def run(
        self, text: str, deadline_s: float = 30, thread_id: str = "", user_id: str = "", **options: Any
    ) -> list[agent_pb2.RunEvent]:
        """All events of one Run."""
        request = agent_pb2.RunRequest(
            input=text, thread_id=thread_id, user_id=user_id, options=agent_pb2.RunOptions(**options)
        )
        return [response.event async for response in self.agent.Run(request, timeout=deadline_s)]

    async def close(self) -> None:
        for close in reversed(self.closers):
            await close()
        await self.channel.close()
        await self.gateway.close(0)
        await self.reasoner.stop(0)
        await self.tools.stop(0)
        await self.model.stop()


async def start_stack(
    script: Script | None = None,
    registry: ToolRegistry | None = None,
    *,
    reasoner_base_url: str | None = None,
    reasoner_addr: str | None = None,
    gateway_overrides: dict[str, Any] | None = None,
    reasoner_overrides: dict[str, Any] | None = None,
    database_url: str | None = None,
    authenticator: Authenticator | None = None,
    service_token: str = "",
    store: Store | None = None,
) -> Stack:
    """Start model, tools, reasoner and gateway on free ports (addresses can be overridden to break hops)."""
    model = ScriptedModelServer(script)
    await model.start()
    service_auth = service_authenticator(service_token)
    tools = await create_tools(
        dataclasses.replace(ToolSettings(), port=0), registry, authenticator=service_auth
    )
    reasoner_fields: dict[str, Any] = {
        "port": 0,
        "base_url": reasoner_base_url or model.base_url,
        "max_retries": 0,
        **(reasoner_overrides or {}),
    }
    reasoner_settings = dataclasses.replace(ReasonerSettings(), **reasoner_fields)
    reasoner, client = await create_reasoner(reasoner_settings, authenticator=service_auth)
    gateway_fields: dict[str, Any] = {
        "port": 0,
        "reasoner_addr": reasoner_addr or f"127.0.0.1:{reasoner.port}",
        "tools_addr": f"127.0.0.1:{tools.port}",
        "rpc_backoff_s": 0.01,
        "database_url": database_url
        or f"sqlite+aiosqlite:///{tempfile.mkdtemp(prefix='agentloop-')}/test.db",
        **(gateway_overrides or {}),
    }
    gateway_settings = dataclasses.replace(GatewaySettings(), **gateway_fields)
    gateway = await create_gateway(
        gateway_settings, store=store, authenticator=authenticator, service_token=service_token
    )
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{gateway.port}")
    return Stack(model, tools, reasoner, gateway, channel, [client.close])


def kinds(events: Sequence[agent_pb2.RunEvent]) -> list[str]:
    """The oneof name of each event, in order."""
    return [str(e.WhichOneof("event")) for e in events]


def final_of(events: Sequence[agent_pb2.RunEvent]) -> agent_pb2.RunFinal:
    """The final event's payload; fails if the run did not end with one."""
    last = events[-1]
    assert last.WhichOneof("event") == "final", f"run ended with {last.WhichOneof('event')}: {last}"
    return last.final


def tokens_joined(events: list[agent_pb2.RunEvent]) -> list[agent_pb2.RunEvent]:
    """Live events as a replay shows them: consecutive tokens of a step as one, numbered like the last."""
    out: list[agent_pb2.RunEvent] = []
    for event in events:
        previous = out[-1] if out else None
        if (
            previous is not None
            and event.WhichOneof("event") == previous.WhichOneof("event") == "llm_token"
            and event.llm_token.step == previous.llm_token.step
            and event.llm_token.WhichOneof("content") == previous.llm_token.WhichOneof("content")
        ):
            previous.sequence = event.sequence
            if event.llm_token.WhichOneof("content") == "reasoning_token":
                previous.llm_token.reasoning_token += event.llm_token.reasoning_token
            else:
                previous.llm_token.token += event.llm_token.token
            continue
        copy = agent_pb2.RunEvent()
        copy.CopyFrom(event)
        out.append(copy)
    return out
