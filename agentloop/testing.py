"""The whole agentloop stack in one process, for testing your tools and your client code.

    from agentloop.testing import Scenario, Script, ScriptedToolCall, Turn, running_stack

    async def test_my_tool() -> None:
        script = Script(scenarios=(Scenario(match="weather", turns=(...)),))
        async with running_stack(script, tools=[get_forecast]) as stack:
            async with stack.client() as client:
                result = await client.invoke("What's the weather?")
        assert "Oslo" in result.reply

Scripted model (HTTP) ← Reasoner (gRPC) ← gateway (gRPC) → ToolService (gRPC), each on an
ephemeral loopback port, each built by the production ``create_server`` of its service:
nothing is mocked, only the model's answers are decided in advance (agentloop.scripted_model).
The gateway keeps its threads in a throwaway SQLite file unless ``database_url`` names another.
The stack stops like the services themselves (agentloop.kernel.serving.Server.aclose), newest first.

The scripted model's vocabulary (``Script``, ``Scenario``, ``Turn``, ``ScriptedToolCall``,
``Fault``, ``Latency``, ...) is re-exported here, so a test imports from one place.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Self, TypeVar

import grpc

from agentloop.client import AgentClient
from agentloop.kernel.security import Authenticator, service_authenticator
from agentloop.kernel.serving import Server
from agentloop.kernel.settings import GatewaySettings, ReasonerSettings, TlsSettings, ToolSettings
from agentloop.scripted_model import (
    DEFAULT_FINAL_TEXT,
    ECHO_SCENARIO,
    Fault,
    FaultKind,
    Latency,
    Scenario,
    Script,
    ScriptedModelServer,
    ScriptedToolCall,
    Turn,
)
from agentloop.v1 import agent_pb2, agent_pb2_grpc, reasoner_pb2_grpc, tools_pb2_grpc
from gateway.api.server import Gateway
from gateway.api.server import create_server as create_gateway
from gateway.api.service import AgentService
from gateway.store.base import Store
from reasoner_svc.service import create_server as create_reasoner
from tool_svc import ToolRegistry
from tool_svc.builtins import default_registry
from tool_svc.loader import load_modules
from tool_svc.service import create_server as create_tools

S = TypeVar("S", bound=Server)


@dataclass
class Stack:
    """Handles on every running part; ``client()`` talks to its gateway."""

    model: ScriptedModelServer
    tools: Server
    reasoner: Server
    gateway: Gateway
    channel: grpc.aio.Channel
    resources: contextlib.AsyncExitStack = field(default_factory=contextlib.AsyncExitStack)
    """Every part above, and the clients and channels opened on them, in the order they were
    started; close() closes them newest first. Push what a test opens on the stack here."""
    home: str | None = None
    """The throwaway directory of the default SQLite database, removed by close()."""

    @property
    def address(self) -> str:
        """The gateway's host:port, for AgentClient, Client or `agentloop ask --gateway`."""
        return f"127.0.0.1:{self.gateway.port}"

    def client(self, **kwargs: Any) -> AgentClient:
        """An AgentClient on this stack's gateway (closed with the stack if not before)."""
        client = AgentClient(self.address, **{"token": "", **kwargs})
        self.resources.push_async_callback(client.close)
        return client

    @property
    def agent_service(self) -> AgentService:
        return self.gateway.service

    @property
    def agent(self) -> agent_pb2_grpc.AgentStub:
        """A raw stub on the gateway (the wire contract itself, for contract tests)."""
        return agent_pb2_grpc.AgentStub(self.channel)

    @property
    def reasoner_stub(self) -> reasoner_pb2_grpc.ReasonerStub:
        return reasoner_pb2_grpc.ReasonerStub(self.channel_to(self.reasoner.port))

    @property
    def tools_stub(self) -> tools_pb2_grpc.ToolServiceStub:
        return tools_pb2_grpc.ToolServiceStub(self.channel_to(self.tools.port))

    def channel_to(self, port: int) -> grpc.aio.Channel:
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        self.resources.push_async_callback(channel.close)
        return channel

    async def run(
        self, text: str, deadline_s: float = 30, thread_id: str = "", user_id: str = "", **options: Any
    ) -> list[agent_pb2.RunEvent]:
        """All wire events of one Run (options are RunOptions fields)."""
        request = agent_pb2.RunRequest(
            input=text, thread_id=thread_id, user_id=user_id, options=agent_pb2.RunOptions(**options)
        )
        return [response.event async for response in self.agent.Run(request, timeout=deadline_s)]

    async def close(self) -> None:
        """Stop everything, newest first; in-flight calls are cancelled, not waited for."""
        await self.resources.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def start_stack(
    script: Script | None = None,
    registry: ToolRegistry | None = None,
    *,
    tools: Sequence[Callable[..., Any]] = (),
    tool_modules: Sequence[str] = (),
    reasoner_base_url: str | None = None,
    reasoner_addr: str | None = None,
    gateway_overrides: dict[str, Any] | None = None,
    reasoner_overrides: dict[str, Any] | None = None,
    database_url: str | None = None,
    authenticator: Authenticator | None = None,
    tls: TlsSettings | None = None,
    store: Store | None = None,
    service_token: str = "",
) -> Stack:
    """Start model, tools, reasoner and gateway on free ports; ``Stack.close()`` stops them.

    Args:
        script: what the model answers (default: echo the question).
        registry: the ToolService's tools; default the built-in tools.
        tools: functions (``@tool`` or plain, typed and documented) added to the registry.
        tool_modules: modules whose tools are added first, named as ``agentloop serve tools
            --tools`` names them.
        reasoner_base_url / reasoner_addr: point a hop elsewhere (a real model, a dead port).
        gateway_overrides / reasoner_overrides: GatewaySettings / ReasonerSettings fields.
        database_url: the gateway's database; default a throwaway SQLite file.
        store: an open store for the gateway instead (database_url is then unused).
        authenticator: turn on bearer-token authentication.
        service_token: the Reasoner and ToolService require it; the gateway sends it.
        tls: serve every hop over TLS: its cert_file / key_file (and client_ca_file for mutual
            TLS) for the three servers, its ca_file / client_cert_file / client_key_file for the
            gateway's calls to the other two.
    """
    registry = default_registry(ToolSettings()) if registry is None else registry
    load_modules(registry, tool_modules)
    for fn in tools:
        registry.register(fn)
    async with contextlib.AsyncExitStack() as started:
        home = None
        if database_url is None:
            home = tempfile.mkdtemp(prefix="agentloop-")
            started.callback(shutil.rmtree, home, ignore_errors=True)
            database_url = f"sqlite+aiosqlite:///{home}/agentloop.db"
        model = ScriptedModelServer(script)
        await model.start()
        started.push_async_callback(model.stop)
        service_auth = service_authenticator(service_token)
        tool_server = _stopped_with(
            started,
            await create_tools(
                dataclasses.replace(ToolSettings(), port=0), registry, tls=tls, authenticator=service_auth
            ),
        )
        reasoner_fields: dict[str, Any] = {
            "port": 0,
            "base_url": reasoner_base_url or model.base_url,
            "max_retries": 0,
            **(reasoner_overrides or {}),
        }
        reasoner_settings = dataclasses.replace(ReasonerSettings(), **reasoner_fields)
        reasoner = _stopped_with(
            started, await create_reasoner(reasoner_settings, tls=tls, authenticator=service_auth)
        )
        gateway_fields: dict[str, Any] = {
            "port": 0,
            "reasoner_addr": reasoner_addr or f"127.0.0.1:{reasoner.port}",
            "tools_addr": f"127.0.0.1:{tool_server.port}",
            "rpc_backoff_s": 0.01,
            "database_url": database_url,
            **(gateway_overrides or {}),
        }
        gateway_settings = dataclasses.replace(GatewaySettings(), **gateway_fields)
        gateway = _stopped_with(
            started,
            await create_gateway(
                gateway_settings,
                store=store,
                tls=tls,
                authenticator=authenticator,
                service_token=service_token,
            ),
        )
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{gateway.port}")
        started.push_async_callback(channel.close)
        return Stack(model, tool_server, reasoner, gateway, channel, started.pop_all(), home)


def _stopped_with(started: contextlib.AsyncExitStack, server: S) -> S:
    """`server`, to be closed with the stack at once (grace 0: a test's calls are over by then)."""
    started.push_async_callback(server.aclose, 0)
    return server


@contextlib.asynccontextmanager
async def running_stack(script: Script | None = None, **kwargs: Any) -> AsyncIterator[Stack]:
    """``start_stack`` as ``async with``: the stack stops when the block ends, failed or not."""
    async with await start_stack(script, **kwargs) as stack:
        yield stack


def kinds(events: Sequence[agent_pb2.RunEvent]) -> list[str]:
    """The oneof name of each wire event, in order."""
    return [str(e.WhichOneof("event")) for e in events]


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


def assert_numbered(events: Sequence[agent_pb2.RunEvent], after: int = 0) -> None:
    """Fail unless a stream's numbers follow `after` one by one, but where tokens were joined.

    An llm_token event replayed from the store may stand for several
    consecutive tokens of its step and carries the last one's number, so a
    number may be skipped just before such an event, and nowhere else.
    """
    last = after
    for event in events:
        kind = event.WhichOneof("event")
        assert event.sequence == last + 1 or (event.sequence > last and kind == "llm_token"), (
            f"event {kind} numbered {event.sequence} after {last}"
        )
        last = event.sequence


def final_of(events: Sequence[agent_pb2.RunEvent]) -> agent_pb2.RunFinal:
    """The final wire event's payload; fails if the run did not end with one."""
    last = events[-1]
    assert last.WhichOneof("event") == "final", f"run ended with {last.WhichOneof('event')}: {last}"
    return last.final


__all__ = [
    "DEFAULT_FINAL_TEXT",
    "ECHO_SCENARIO",
    "Fault",
    "FaultKind",
    "Latency",
    "Scenario",
    "Script",
    "ScriptedModelServer",
    "ScriptedToolCall",
    "Stack",
    "Turn",
    "assert_numbered",
    "final_of",
    "kinds",
    "running_stack",
    "start_stack",
    "tokens_joined",
]
