"""Authentication, TLS on every hop, and the gateway's limits."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import grpc
import pytest

from agentloop.cli.main import health
from agentloop.kernel.security import Authenticator
from agentloop.kernel.settings import GatewaySettings, ReasonerSettings, TlsSettings, ToolSettings
from agentloop.kernel.tls import open_channel
from agentloop.scripted_model import Scenario, Script, ScriptedModelServer, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2, agent_pb2_grpc, common_pb2
from gateway.api.server import create_server as create_gateway
from reasoner_svc.service import create_server as create_reasoner
from tests.support.certs import make_certs
from tests.support.scripts import add_scenario
from tests.support.stack import final_of, start_stack
from tests.support.tools import make_registry
from tests.support.waiting import assert_eventually
from tool_svc.service import create_server as create_tools

pytestmark = pytest.mark.integration

SCRIPT = Script(
    scenarios=(
        add_scenario(2, 3, "{{tool:add}}", match="^add$"),
        Scenario(
            match="^many$",
            turns=(
                Turn(
                    tool_calls=(
                        ScriptedToolCall("add", {"a": 1, "b": 1}),
                        ScriptedToolCall("add", {"a": 2, "b": 2}),
                        ScriptedToolCall("add", {"a": 3, "b": 3}),
                    )
                ),
                Turn(content="{{last_tool}}"),
            ),
        ),
        Scenario(
            match="^slow$",
            turns=(Turn(tool_calls=(ScriptedToolCall("sleep_for", {"seconds": 30}),)), Turn(content="done")),
        ),
        Scenario(match="", turns=(Turn(content="hello {{user}}"),)),
    )
)
TOKENS = {"tok-ana": "ana", "tok-bob": "bob"}


def bearer(token: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {token}"),)


async def test_bearer_tokens_decide_who_the_caller_is() -> None:
    stack = await start_stack(SCRIPT, make_registry()[0], authenticator=Authenticator(tokens=dict(TOKENS)))
    agent = stack.agent
    try:
        request = agent_pb2.InvokeRequest(input="hi")
        for metadata in (None, bearer("wrong")):
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await agent.Invoke(request, metadata=metadata)
            assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
        reply = await agent.Invoke(request, metadata=bearer("tok-ana"))
        thread = agent_pb2.GetThreadRequest(thread_id=reply.thread_id)
        assert (await agent.GetThread(thread, metadata=bearer("tok-ana"))).user_id == "ana"
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await agent.GetThread(thread, metadata=bearer("tok-bob"))
        assert info.value.code() == grpc.StatusCode.NOT_FOUND
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await agent.GetThread(
                agent_pb2.GetThreadRequest(thread_id=reply.thread_id, user_id="bob"),
                metadata=bearer("tok-ana"),
            )
        assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await agent.Cancel(agent_pb2.CancelRequest(run_id=reply.run_id), metadata=bearer("tok-bob"))
        assert info.value.code() == grpc.StatusCode.NOT_FOUND
        # Health stays open for load balancers.
        assert await health(f"127.0.0.1:{stack.gateway.port}", "", 3) == 0
    finally:
        await stack.close()


async def test_a_pluggable_verifier_can_authenticate() -> None:
    async def verify(token: str) -> str | None:
        return "carol" if token == "magic" else None

    stack = await start_stack(SCRIPT, make_registry()[0], authenticator=Authenticator(verifier=verify))
    try:
        reply = await stack.agent.Invoke(agent_pb2.InvokeRequest(input="hi"), metadata=bearer("magic"))
        thread = await stack.agent.GetThread(
            agent_pb2.GetThreadRequest(thread_id=reply.thread_id), metadata=bearer("magic")
        )
        assert thread.user_id == "carol"
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stack.agent.Invoke(agent_pb2.InvokeRequest(input="hi"), metadata=bearer("nope"))
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    finally:
        await stack.close()


def test_token_configuration_is_parsed_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text("# team tokens\nt1=ana\nt2=bob\n")
    auth = Authenticator.from_env(
        {"AGENTLOOP_AUTH_TOKENS": "t0=zoe", "AGENTLOOP_AUTH_TOKENS_FILE": str(path)}
    )
    assert auth.tokens == {"t0": "zoe", "t1": "ana", "t2": "bob"}
    assert not Authenticator.from_env({}).enabled
    with pytest.raises(ValueError, match="token=user_id"):
        Authenticator.from_env({"AGENTLOOP_AUTH_TOKENS": "just-a-token"})


async def test_every_hop_can_run_over_mutual_tls() -> None:
    certs = make_certs(Path(tempfile.mkdtemp(prefix="agentloop-certs-")))
    server_tls = TlsSettings(
        cert_file=str(certs.server_cert), key_file=str(certs.server_key), client_ca_file=str(certs.ca)
    )
    client_tls = TlsSettings(
        ca_file=str(certs.ca), client_cert_file=str(certs.client_cert), client_key_file=str(certs.client_key)
    )
    both = dataclasses.replace(
        server_tls,
        **{
            f.name: getattr(client_tls, f.name)
            for f in dataclasses.fields(client_tls)
            if getattr(client_tls, f.name)
        },
    )
    async with ScriptedModelServer(SCRIPT) as model:
        tools = await create_tools(
            dataclasses.replace(ToolSettings(), port=0), make_registry()[0], tls=server_tls
        )
        reasoner = await create_reasoner(
            dataclasses.replace(ReasonerSettings(), port=0, base_url=model.base_url), tls=server_tls
        )
        settings = dataclasses.replace(
            GatewaySettings(),
            port=0,
            reasoner_addr=f"localhost:{reasoner.port}",
            tools_addr=f"localhost:{tools.port}",
            database_url=f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/tls.db",
        )
        gateway = await create_gateway(settings, tls=both)
        try:
            async with open_channel(f"localhost:{gateway.port}", client_tls) as channel:
                reply = await agent_pb2_grpc.AgentStub(channel).Invoke(
                    agent_pb2.InvokeRequest(input="add"), timeout=20
                )
                assert reply.final.final_reply == "5"
            no_client_cert = TlsSettings(ca_file=str(certs.ca))
            for tls in (no_client_cert, None):
                async with open_channel(f"localhost:{gateway.port}", tls) as channel:
                    with pytest.raises(grpc.aio.AioRpcError) as info:
                        await agent_pb2_grpc.AgentStub(channel).Invoke(
                            agent_pb2.InvokeRequest(input="hi"), timeout=5
                        )
                    assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        finally:
            await gateway.aclose(0)
            await reasoner.aclose(0)
            await tools.aclose(0)


async def test_limits_protect_the_gateway() -> None:
    overrides = {
        "max_active_runs": 1,
        "max_tool_calls_per_step": 2,
        "max_argument_bytes": 64,
        "max_message_bytes": 4096,
    }
    registry, probe = make_registry()
    stack = await start_stack(SCRIPT, registry, gateway_overrides=overrides)
    try:
        events = await stack.run("many")
        results = [e.tool_end.result for e in events if e.WhichOneof("event") == "tool_end"]
        assert sorted(r.is_error for r in results) == [False, False, True]
        assert any("Too many tool calls" in r.content for r in results)
        assert probe.calls["add"] == 2

        assert final_of(await stack.run("add")).final_reply == "5"
        big = agent_pb2.RunRequest(input="x" * 10_000)
        with pytest.raises(grpc.aio.AioRpcError) as info:
            async for _ in stack.agent.Run(big):
                pass
        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED

        slow = stack.agent.Run(agent_pb2.RunRequest(input="slow", user_id="ana"))
        async for response in slow:
            if response.event.WhichOneof("event") == "tool_start":
                break
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stack.run("hi")
        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        slow.cancel()
    finally:
        await stack.close()


async def test_oversized_tool_arguments_are_refused_not_run() -> None:
    registry, probe = make_registry()
    stack = await start_stack(SCRIPT, registry, gateway_overrides={"max_argument_bytes": 10})
    try:
        events = await stack.run("add")
        (result,) = [e.tool_end.result for e in events if e.WhichOneof("event") == "tool_end"]
        assert result.error_kind == common_pb2.TOOL_ERROR_KIND_INVALID_ARGUMENTS
        assert "larger than 10 bytes" in result.content
        assert probe.calls["add"] == 0
    finally:
        await stack.close()


async def test_gateway_health_follows_its_dependencies() -> None:
    stack = await start_stack(SCRIPT, make_registry()[0], gateway_overrides={"health_interval_s": 0.1})
    addr = f"127.0.0.1:{stack.gateway.port}"
    try:
        await assert_eventually(
            lambda: stack.gateway.health is not None and bool(stack.gateway.health.status)
        )
        assert await health(addr, "", 3) == 0
        assert await health(addr, "store", 3) == 0
        await stack.tools.aclose(0)
        health_state = stack.gateway.health
        assert health_state is not None
        await assert_eventually(lambda: health_state.status.get("tools") is False, timeout_s=10)
        assert await health(addr, "", 3) == 1
        assert await health(addr, "tools", 3) == 1
        assert await health(addr, "reasoner", 3) == 0
    finally:
        await stack.close()
