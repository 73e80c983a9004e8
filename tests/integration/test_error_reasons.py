"""Every ErrorInfo reason docs/clients.md promises is what the real gateway sends, and no other.

The test reads the table of reasons from the page itself, provokes each row
against real services (two gateways on one database, for the reasons that
need a second owner or a full gateway; the Reasoner for its own), and checks code and reason as any
gRPC client reads them: from the `grpc-status-details-bin` trailer. The
table must name exactly the reasons of `agentloop.kernel.errors.Reason`, the only
reasons the code can raise with (mypy holds every raise to that type).
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from agentloop.kernel.errors import Reason
from agentloop.kernel.settings import GATEWAY_LIMITS, GatewaySettings
from agentloop.scripted_model import Fault, Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2, agent_pb2_grpc, common_pb2, reasoner_pb2
from gateway.api.server import Gateway
from gateway.api.server import create_server as create_gateway
from tests.support.postgres import private_cluster
from tests.support.scripts import add_scenario
from tests.support.stack import Stack, start_stack
from tests.support.tools import make_registry

pytestmark = pytest.mark.integration

DOC = Path(__file__).resolve().parents[2] / "docs" / "clients.md"
CODE_NAME = "the code's name"
"""The table's row for every error raised without a reason of its own."""

SCRIPT = Script(
    scenarios=(
        add_scenario(1, 2, "Result: {{last_tool}}", match="^add please$"),
        Scenario(
            match="^slow tool$",
            turns=(Turn(tool_calls=(ScriptedToolCall("sleep_for", {"seconds": 30}),)), Turn(content="done")),
        ),
        Scenario(match="", turns=(Turn(content="ok"),)),
    )
)


def documented_reasons() -> dict[str, str]:
    """reason → code ("any" for every code) of each row of the table of reasons."""
    text = DOC.read_text()
    section = text[text.index("Reasons a client may branch on") :]
    section = section[: section.index("\n\n", section.index("| code | reason |"))]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        match = re.match(r"^\| (`[A-Z_]+`|any) \| (`[A-Z_]+`|the code's name) \|", line)
        if match:
            code, reason = (cell.strip("`") for cell in match.groups())
            assert reason not in rows, f"{reason} has two rows"
            rows[reason] = code
    return rows


def reason_of(error: grpc.aio.AioRpcError) -> tuple[str, str]:
    """(status code name, ErrorInfo reason) of a failed call."""
    status = rpc_status.from_call(error)
    assert status is not None, f"no status details on {error.code().name}: {error.details()}"
    infos = [d for d in status.details if d.Is(error_details_pb2.ErrorInfo.DESCRIPTOR)]
    assert len(infos) == 1, status
    info = error_details_pb2.ErrorInfo()
    infos[0].Unpack(info)
    return error.code().name, info.reason


async def failure(call: Callable[[], Awaitable[Any]]) -> tuple[str, str]:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call()
    return reason_of(info.value)


async def drained(call: Any) -> list[agent_pb2.RunEvent]:
    return [response.event async for response in call]


async def started_slow_run(agent: agent_pb2_grpc.AgentStub, thread_id: str) -> str:
    """A run sitting in a 30 s tool; its id, once the tool started."""
    call = agent.Run(agent_pb2.RunRequest(input="slow tool", thread_id=thread_id, user_id="ana"))
    async for response in call:
        if response.event.WhichOneof("event") == "tool_start":
            return response.event.run_id
    raise AssertionError("the slow run ended before its tool started")


async def database_down(stack: Stack) -> tuple[str, str]:
    """DATABASE_UNAVAILABLE: a gateway on a Postgres of its own that stops, asked for a thread."""
    async with private_cluster() as cluster:
        settings = dataclasses.replace(
            GatewaySettings(),
            port=0,
            reasoner_addr=f"127.0.0.1:{stack.reasoner.port}",
            tools_addr=f"127.0.0.1:{stack.tools.port}",
            database_url=cluster.url,
            store_retry_budget_s=0.5,
        )
        gateway = await create_gateway(settings)
        try:
            await asyncio.to_thread(cluster.stop)
            agent = agent_pb2_grpc.AgentStub(stack.channel_to(gateway.port))
            request = agent_pb2.GetThreadRequest(thread_id="any", user_id="ana")
            return await failure(lambda: agent.GetThread(request, timeout=30))
        finally:
            await gateway.aclose(0)


@pytest.fixture
async def two_gateways(database_url: str, tmp_path: Path) -> AsyncIterator[tuple[Stack, Gateway]]:
    """The stack's gateway, and a second one on the same database admitting one run at a time.

    The Reasoner serves its models by name (a models file), so an unknown one is refused.
    """
    registry, _ = make_registry()
    models = tmp_path / "models.json"
    models.write_text('{"models": {"other": {}}}')
    stack = await start_stack(
        SCRIPT, registry, database_url=database_url, reasoner_overrides={"models_file": str(models)}
    )
    settings = dataclasses.replace(
        GatewaySettings(),
        port=0,
        reasoner_addr=f"127.0.0.1:{stack.reasoner.port}",
        tools_addr=f"127.0.0.1:{stack.tools.port}",
        database_url=database_url,
        max_active_runs=1,
    )
    other = await create_gateway(settings)
    try:
        yield stack, other
    finally:
        await other.aclose(0)
        await stack.close()


async def bounded_callers(stack: Stack, database_url: str) -> dict[str, tuple[str, str]]:
    """TOO_MANY_RUNS_FOR_CALLER, TOO_MANY_CALLS_FROM_PEER and TOO_MANY_CALLS, as a gateway sends them."""
    settings = dataclasses.replace(
        GatewaySettings(),
        host="[::]",
        port=0,
        reasoner_addr=f"127.0.0.1:{stack.reasoner.port}",
        tools_addr=f"127.0.0.1:{stack.tools.port}",
        database_url=database_url,
        max_active_runs=2,
        max_active_runs_per_caller=1,
        limits=dataclasses.replace(GATEWAY_LIMITS, max_calls_per_peer=2, max_calls=4),
    )
    limited = await create_gateway(settings)
    seen: dict[str, tuple[str, str]] = {}
    try:
        ipv4, ipv6 = stack.channel_to(limited.port), grpc.aio.insecure_channel(f"[::1]:{limited.port}")
        agent, health_v4 = agent_pb2_grpc.AgentStub(ipv4), health_pb2_grpc.HealthStub(ipv4)
        health_v6 = health_pb2_grpc.HealthStub(ipv6)
        check = health_pb2.HealthCheckRequest()
        slow = await started_slow_run(agent, "t-limited")  # 127.0.0.1: one run, one call
        seen["TOO_MANY_RUNS_FOR_CALLER"] = await failure(
            lambda: drained(agent.Run(agent_pb2.RunRequest(input="hi", user_id="bob")))
        )
        watches = [health_v4.Watch(check), health_v6.Watch(check)]  # 127.0.0.1 holds two calls
        for watch in watches:
            await watch.read()
        seen["TOO_MANY_CALLS_FROM_PEER"] = await failure(lambda: health_v4.Check(check))
        watches.append(health_v6.Watch(check))  # ::1 holds two calls too: four in all
        await watches[-1].read()
        seen["TOO_MANY_CALLS"] = await failure(lambda: health_v6.Check(check))
        for watch in watches:
            watch.cancel()
        await ipv6.close()
        await agent.Cancel(agent_pb2.CancelRequest(run_id=slow, user_id="ana"), timeout=15)
    finally:
        await limited.aclose(0)
    return seen


async def test_every_documented_reason_is_sent_as_documented(
    two_gateways: tuple[Stack, Gateway], database_url: str
) -> None:
    stack, other = two_gateways
    agent = stack.agent
    elsewhere = agent_pb2_grpc.AgentStub(stack.channel_to(other.port))
    seen: dict[str, list[str]] = {}

    def saw(reason_and_code: tuple[str, str], row: str) -> None:
        code, reason = reason_and_code
        seen.setdefault(row, []).append(code)
        assert reason == (code if row == CODE_NAME else row), (row, code, reason)

    async def run(text: str, thread_id: str, **options: Any) -> list[agent_pb2.RunEvent]:
        request = agent_pb2.RunRequest(
            input=text, thread_id=thread_id, user_id="ana", options=agent_pb2.RunOptions(**options)
        )
        return await drained(agent.Run(request, timeout=30))

    # A completed thread, a paused one, a busy one here and a busy one on the other gateway.
    done = await run("add please", "t-done")
    paused = await run("add please", "t-paused", require_approval=["add"])
    interrupt = next(e for e in paused if e.WhichOneof("event") == "interrupt")
    busy_here = await started_slow_run(agent, "t-busy")
    busy_there = await started_slow_run(elsewhere, "t-there")

    saw(await failure(lambda: run("hello", "t-busy")), "THREAD_BUSY")
    saw(await failure(lambda: run("hello", "t-paused")), "THREAD_AWAITING_APPROVAL")
    saw(
        await failure(lambda: agent.GetThread(agent_pb2.GetThreadRequest(thread_id="nope", user_id="ana"))),
        "THREAD_NOT_FOUND",
    )
    saw(
        await failure(lambda: agent.Cancel(agent_pb2.CancelRequest(run_id="nope", user_id="ana"))),
        "RUN_NOT_FOUND",
    )
    saw(
        await failure(
            lambda: drained(agent.Watch(agent_pb2.WatchRequest(run_id=done[0].run_id, user_id="bob")))
        ),
        "RUN_NOT_FOUND",
    )
    fork = agent_pb2.ForkThreadRequest(thread_id="t-done", user_id="ana", checkpoint_id="nope:0")
    saw(await failure(lambda: agent.ForkThread(fork)), "CHECKPOINT_NOT_FOUND")
    saw(
        await failure(
            lambda: agent.DeleteMemory(agent_pb2.DeleteMemoryRequest(memory_id="nope", user_id="ana"))
        ),
        "MEMORY_NOT_FOUND",
    )
    checkpoints = await agent.ListCheckpoints(
        agent_pb2.ListCheckpointsRequest(thread_id="t-done", user_id="ana")
    )
    fork.checkpoint_id, fork.new_thread_id = checkpoints.checkpoints[0].checkpoint_id, "t-paused"
    saw(await failure(lambda: agent.ForkThread(fork)), "THREAD_EXISTS")

    # Resume of an ended run, with and without decisions (those of the paused run, once it ended).
    resume_done = agent_pb2.ResumeRequest(run_id=done[0].run_id, user_id="ana")
    saw(await failure(lambda: drained(agent.Resume(resume_done))), "RUN_NOT_RESUMABLE")
    decision = agent_pb2.ApprovalDecision(
        tool_call_id=interrupt.interrupt.pending[0].id, verdict=agent_pb2.ApprovalDecision.VERDICT_APPROVE
    )
    resume_paused = agent_pb2.ResumeRequest(run_id=interrupt.run_id, user_id="ana", decisions=[decision])
    resumed = await drained(agent.Resume(resume_paused))
    assert resumed[-1].WhichOneof("event") == "final"
    saw(await failure(lambda: drained(agent.Resume(resume_paused))), "RUN_NOT_RESUMABLE")

    resume_there = agent_pb2.ResumeRequest(run_id=busy_there, user_id="ana")
    saw(await failure(lambda: drained(agent.Resume(resume_there))), "RUN_OWNED_ELSEWHERE")
    saw(
        await failure(lambda: drained(elsewhere.Run(agent_pb2.RunRequest(input="hi", user_id="ana")))),
        "TOO_MANY_RUNS",
    )

    # Invoke's failed run: the model endpoint refuses the key (FAILED_PRECONDITION from the Reasoner).
    stack.model.set_script(dataclasses.replace(SCRIPT, faults=(Fault("status", 401),)))
    invoke = agent_pb2.InvokeRequest(input="hello", user_id="ana")
    saw(await failure(lambda: agent.Invoke(invoke)), "RUN_FAILED")
    saw(await failure(lambda: agent.Invoke(agent_pb2.InvokeRequest(input="", user_id="ana"))), CODE_NAME)

    # The Reasoner's own: a prompt the endpoint finds too long, an answer that cannot be read.
    step = reasoner_pb2.StepRequest(
        params=reasoner_pb2.CompletionParams(
            messages=[common_pb2.Message(role=common_pb2.ROLE_USER, content="hi")]
        )
    )
    too_long = Fault("status", 400, message="This model's maximum context length is 8192 tokens.")
    stack.model.set_script(dataclasses.replace(SCRIPT, faults=(too_long,)))
    saw(await failure(lambda: stack.reasoner_stub.Step(step)), "CONTEXT_LENGTH_EXCEEDED")
    stack.model.set_script(dataclasses.replace(SCRIPT, faults=(Fault("malformed_json", times=5),)))
    saw(await failure(lambda: stack.reasoner_stub.Step(step)), "MODEL_ANSWER_MALFORMED")
    stack.model.set_script(SCRIPT)

    # A model neither the gateway (at the request) nor the Reasoner serves.
    unknown = agent_pb2.InvokeRequest(
        input="hello", user_id="ana", options=agent_pb2.RunOptions(model="nope")
    )
    saw(await failure(lambda: agent.Invoke(unknown)), "UNKNOWN_MODEL")
    step.params.model = "nope"
    saw(await failure(lambda: stack.reasoner_stub.Step(step)), "UNKNOWN_MODEL")

    for run_id, stub in ((busy_here, agent), (busy_there, elsewhere)):
        await stub.Cancel(agent_pb2.CancelRequest(run_id=run_id, user_id="ana"), timeout=15)

    # What one caller and one address may hold: a third gateway on every address, IPv4 and IPv6
    # (two client addresses), with a share of one run per caller, two calls per address, four in all.
    for row, code in (await bounded_callers(stack, database_url)).items():
        saw(code, row)
    saw(await database_down(stack), "DATABASE_UNAVAILABLE")

    documented = documented_reasons()
    assert set(seen) == set(documented), "every row provoked, and nothing else"
    for row, codes in seen.items():
        assert documented[row] == "any" or set(codes) == {documented[row]}, (row, codes)
    assert set(seen["RUN_FAILED"]) == {"FAILED_PRECONDITION"}  # the code is the failure's
    assert set(documented) - {CODE_NAME} == {r.value for r in Reason}
