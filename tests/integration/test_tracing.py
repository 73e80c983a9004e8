"""One run is one trace across three real processes, exported over OTLP/gRPC to a real receiver.

The test runs an OTLP trace receiver (the collector's gRPC TraceService) and
the scripted model in-process; the reasoner, the tool service and the gateway
are separate processes started the way `agentloop serve` is, exporting with
OTEL_TRACES_EXPORTER=otlp. After one Agent.Run the children are stopped with
SIGTERM, which must flush their spans; then the spans are checked: three
services, one trace id, the parent links of the span tree, GenAI attributes
with real token counts, and JSON log lines of the gateway carrying the same
trace id.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import sys
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1 import common_pb2 as otlp_common_pb2
from opentelemetry.proto.trace.v1 import trace_pb2
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from agentloop.cli.demo import Child
from agentloop.kernel.settings import GatewaySettings, ReasonerSettings, TelemetrySettings, ToolSettings
from agentloop.kernel.telemetry import Telemetry
from agentloop.scripted_model import DEMO_QUESTION, ScriptedModelServer, demo_script
from agentloop.v1 import (
    agent_pb2,
    agent_pb2_grpc,
    common_pb2,
    reasoner_pb2,
    reasoner_pb2_grpc,
    tools_pb2,
    tools_pb2_grpc,
)
from gateway.api.server import create_server as create_gateway
from reasoner_svc.service import create_server as create_reasoner
from tests.support.net import free_port
from tests.support.waiting import assert_eventually
from tool_svc.service import create_server as create_tools

pytestmark = pytest.mark.integration

SERVICES = ("agentloop-gateway", "agentloop-reasoner", "agentloop-tools")
SERVER = trace_pb2.Span.SPAN_KIND_SERVER
CLIENT = trace_pb2.Span.SPAN_KIND_CLIENT
ERROR = trace_pb2.Status.STATUS_CODE_ERROR


def _value(value: otlp_common_pb2.AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


def _attributes(pairs: Iterable[otlp_common_pb2.KeyValue]) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in pairs}


@dataclass(frozen=True)
class Received:
    """One exported span and the service that sent it."""

    service: str
    span: trace_pb2.Span

    @property
    def name(self) -> str:
        return self.span.name

    @property
    def attributes(self) -> dict[str, Any]:
        return _attributes(self.span.attributes)


class TraceReceiver(trace_service_pb2_grpc.TraceServiceServicer):
    """The OTLP/gRPC trace endpoint of a collector, keeping what it receives."""

    def __init__(self) -> None:
        self.spans: list[Received] = []

    async def Export(
        self, request: trace_service_pb2.ExportTraceServiceRequest, context: grpc.aio.ServicerContext
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        for resource_spans in request.resource_spans:
            service = str(_attributes(resource_spans.resource.attributes).get("service.name", ""))
            for scope_spans in resource_spans.scope_spans:
                self.spans.extend(Received(service, span) for span in scope_spans.spans)
        return trace_service_pb2.ExportTraceServiceResponse()

    def services(self) -> set[str]:
        return {s.service for s in self.spans}

    def named(self, name: str, service: str | None = None) -> list[Received]:
        return [s for s in self.spans if s.name == name and (service is None or s.service == service)]

    def one(self, name: str, service: str | None = None) -> Received:
        found = self.named(name, service)
        assert len(found) == 1, f"expected one {name!r} span, got {len(found)}: {self.summary()}"
        return found[0]

    def summary(self) -> list[str]:
        return sorted(f"{s.service}:{s.name}" for s in self.spans)

    def summary_of(self, trace_id: bytes) -> list[str]:
        return sorted(f"{s.service}:{s.name}" for s in self.spans if s.span.trace_id == trace_id)


@pytest.fixture
async def receiver() -> AsyncIterator[tuple[TraceReceiver, int]]:
    collector = TraceReceiver()
    server = grpc.aio.server()
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(collector, server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield collector, port
    finally:
        await server.stop(0)


@pytest.fixture
async def model() -> AsyncIterator[ScriptedModelServer]:
    server = ScriptedModelServer(demo_script())
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def _start(name: str, argv: list[str], env: dict[str, str], logs: Path) -> Child:
    # A thread: Child blocks until the process prints its port, and this loop serves the receiver.
    return await asyncio.to_thread(Child, name, argv, env, str(logs / f"{name}.log"))


@dataclass
class Services:
    """The three services as processes, exporting spans to the receiver; the gateway's log file."""

    gateway_port: int
    gateway_log: Path
    children: list[Child]


@contextlib.asynccontextmanager
async def three_services(otlp_port: int, model: ScriptedModelServer, logs: Path) -> AsyncIterator[Services]:
    """Reasoner, tools and gateway started the way `agentloop serve` is, exporting over OTLP.

    On exit they are stopped gracefully, gateway first (each must flush its
    spans before it exits), and each must exit with status 0.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_", "AGENTLOOP_"))}
    env.update(
        OTEL_TRACES_EXPORTER="otlp",
        OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{otlp_port}",
        OTEL_BSP_SCHEDULE_DELAY="100",
        OPENAI_BASE_URL=model.base_url,
        DATABASE_URL=f"sqlite+aiosqlite:///{logs / 'agentloop.db'}",
        AGENTLOOP_LOG_FORMAT="json",
        AGENTLOOP_LOG_LEVEL="DEBUG",  # the loop logs its nodes and routes at DEBUG
    )
    cli = [sys.executable, "-m", "agentloop.cli", "serve"]
    children: list[Child] = []
    try:
        reasoner = await _start("reasoner", [*cli, "reasoner", "--port", "0"], env, logs)
        children.append(reasoner)
        tools = await _start("tools", [*cli, "tools", "--port", "0"], env, logs)
        children.append(tools)
        gateway_argv = [
            *cli, "gateway", "--port", "0",
            "--reasoner", f"127.0.0.1:{reasoner.port}", "--tools-addr", f"127.0.0.1:{tools.port}",
        ]  # fmt: skip
        gateway = await _start("gateway", gateway_argv, env, logs)
        children.append(gateway)
        yield Services(gateway.port, logs / "gateway.log", children)
    finally:
        for child in reversed(children):
            await asyncio.to_thread(child.stop)
    for child in children:
        assert child.proc.returncode == 0, f"{child.name} exited with {child.proc.returncode}"


@pytest.mark.timeout(120)
async def test_one_run_is_one_trace_across_the_three_services(
    receiver: tuple[TraceReceiver, int], model: ScriptedModelServer, tmp_path: Path
) -> None:
    collector, otlp_port = receiver
    async with three_services(otlp_port, model, tmp_path) as services:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{services.gateway_port}") as channel:
            request = agent_pb2.RunRequest(input=DEMO_QUESTION, user_id="ana")
            events = [r.event async for r in agent_pb2_grpc.AgentStub(channel).Run(request, timeout=60)]
        assert events[-1].WhichOneof("event") == "final", events[-1]
        assert "7006652" in events[-1].final.final_reply
        run_id = events[-1].run_id

    await assert_eventually(
        lambda: collector.services() >= set(SERVICES) and bool(collector.named("chat scripted")),
        timeout_s=15,
        message=f"spans from {sorted(collector.services())}, expected {SERVICES}",
    )

    # One trace: every span of all three services carries the run's trace id.
    traces = {s.span.trace_id for s in collector.spans}
    assert len(traces) == 1, [(t.hex()[:8], collector.summary_of(t)) for t in traces]

    by_id = {s.span.span_id: s for s in collector.spans}

    def parent(child: Received) -> Received:
        found = by_id.get(child.span.parent_span_id)
        assert found is not None, f"{child.service}:{child.name} has no exported parent"
        return found

    # The gateway: Agent/Run (SERVER) → the run → one span per node.
    run_rpc = collector.one("agentloop.v1.Agent/Run", "agentloop-gateway")
    assert run_rpc.span.kind == SERVER
    assert run_rpc.span.parent_span_id == b""
    assert run_rpc.attributes["rpc.grpc.status_code"] == 0
    run = collector.one("invoke_agent agentloop", "agentloop-gateway")
    assert parent(run) is run_rpc
    assert run.attributes["agentloop.run_id"] == run_id
    assert run.attributes["agentloop.user_id"] == "ana"
    assert run.attributes["agentloop.run.status"] == "completed"
    assert run.attributes["gen_ai.usage.input_tokens"] > 0
    node_spans = [s for s in collector.spans if s.name.startswith("node ")]
    assert {s.name for s in node_spans} >= {"node init_state", "node agent", "node tools", "node finalize"}
    assert all(parent(s) is run for s in node_spans)
    assert all(s.attributes["agentloop.run_id"] == run_id for s in node_spans)
    for write in collector.named("store write_checkpoint"):
        assert parent(write) is run
    for write in collector.named("store record_tool_results"):
        assert parent(write).name == "node tools"

    # The reasoner: its SERVER spans continue a gateway node span; the model call is under them.
    reasoner_rpcs = [s for s in collector.spans if s.name.startswith("agentloop.v1.Reasoner/")]
    assert reasoner_rpcs
    for rpc in reasoner_rpcs:
        assert rpc.service == "agentloop-reasoner"
        assert rpc.span.kind == SERVER
        assert parent(rpc).service == "agentloop-gateway"
        assert parent(rpc).name == "node agent"
    chats = collector.named("chat scripted", "agentloop-reasoner")
    assert len(chats) == len(reasoner_rpcs)
    for chat in chats:
        assert parent(chat) in reasoner_rpcs
        assert chat.span.kind == CLIENT
        attrs = chat.attributes
        assert attrs["gen_ai.operation.name"] == "chat"
        assert attrs["gen_ai.provider.name"] == "openai"
        assert attrs["gen_ai.system"] == "openai"
        assert attrs["gen_ai.request.model"] == "scripted"
        assert attrs["gen_ai.response.model"]
        assert attrs["gen_ai.usage.input_tokens"] > 0
        assert attrs["gen_ai.usage.output_tokens"] > 0
        assert attrs["gen_ai.response.finish_reasons"]
    assert any(c.attributes["gen_ai.response.finish_reasons"] == ["tool_calls"] for c in chats)

    # The tool service: Execute (SERVER) under the tools node; one span per call under it.
    execute = collector.one("agentloop.v1.ToolService/Execute", "agentloop-tools")
    assert execute.span.kind == SERVER
    assert parent(execute).name == "node tools"
    assert parent(execute).service == "agentloop-gateway"
    tool_spans = [s for s in collector.spans if s.name.startswith("execute_tool ")]
    assert sorted(s.name for s in tool_spans) == ["execute_tool calculator", "execute_tool current_time"]
    for tool_span in tool_spans:
        assert parent(tool_span) is execute
        attrs = tool_span.attributes
        assert attrs["gen_ai.operation.name"] == "execute_tool"
        assert tool_span.name == f"execute_tool {attrs['gen_ai.tool.name']}"
        assert attrs["gen_ai.tool.call.id"]
        assert attrs["agentloop.tool.duration_ms"] >= 0
        assert "error.type" not in attrs

    # The gateway's JSON logs name the same trace, so logs and traces join on trace_id.
    trace_id = run.span.trace_id.hex()
    lines = [json.loads(line) for line in (tmp_path / "gateway.log").read_text().splitlines() if line]
    routing = [e for e in lines if e.get("run_id") == run_id and "next_node" in e]
    assert routing[0]["node"] == "init_state"
    assert routing[-1]["next_node"] == "END"
    assert all(e["trace_id"] == trace_id and e["span_id"] for e in routing)
    assert all({"ts", "level", "logger", "message"} <= set(e) for e in lines)
    assert not [e for e in lines if e["level"] in ("WARNING", "ERROR")], "a successful run logs no trouble"


RUNS_CUT_SHORT = 100


@pytest.mark.timeout(240)
async def test_runs_whose_client_hangs_up_after_the_final_event_are_never_errors(
    receiver: tuple[TraceReceiver, int], model: ScriptedModelServer, tmp_path: Path
) -> None:
    """Successful streamed runs, the client closing each stream as soon as the final event arrives.

    Closing the stream cancels the call while the gateway may still be
    finishing it: the span of Agent/Run must not turn that into an ERROR, and
    no service may log a context it failed to detach.
    """
    collector, otlp_port = receiver
    async with (
        three_services(otlp_port, model, tmp_path) as services,
        grpc.aio.insecure_channel(f"127.0.0.1:{services.gateway_port}") as channel,
    ):
        stub = agent_pb2_grpc.AgentStub(channel)
        for _ in range(RUNS_CUT_SHORT):
            call = stub.Run(agent_pb2.RunRequest(input=DEMO_QUESTION, user_id="ana"), timeout=60)
            async for response in call:
                if response.event.WhichOneof("event") == "final":
                    call.cancel()
                    break
            assert response.event.final.metadata.stop_reason == agent_pb2.STOP_REASON_COMPLETED
    await assert_eventually(
        lambda: (
            len(collector.named("agentloop.v1.Agent/Run")) == RUNS_CUT_SHORT
            and len(collector.named("invoke_agent agentloop")) == RUNS_CUT_SHORT
        ),
        timeout_s=15,
        message="a span of every run",
    )
    errors = [
        f"{s.service}:{s.name}: {s.span.status.message}"
        for s in collector.spans
        if s.span.status.code == ERROR
    ]
    detach_failures = _count_in_logs(tmp_path, "Failed to detach context")
    assert (len(errors), sum(detach_failures.values())) == (0, 0), (errors[:3], detach_failures)


def _count_in_logs(logs: Path, text: str) -> dict[str, int]:
    """How often each service's log file says `text`."""
    return {log.name: log.read_text().count(text) for log in sorted(logs.glob("*.log"))}


# --- in-process: statuses, error results and run metrics ---------------------------------------


@dataclass
class Recorded:
    telemetry: Telemetry
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader

    def span(self, name: str) -> ReadableSpan:
        [found] = [s for s in self.spans.get_finished_spans() if s.name == name]
        return found

    def points(self, metric: str) -> list[tuple[dict[str, Any], Any]]:
        data = self.metrics.get_metrics_data()
        assert data is not None
        return [
            (dict(p.attributes or {}), getattr(p, "value", None))
            for rm in data.resource_metrics
            for sm in rm.scope_metrics
            for m in sm.metrics
            if m.name == metric
            for p in m.data.data_points
        ]


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    spans, metrics = InMemorySpanExporter(), InMemoryMetricReader()
    telemetry = Telemetry.from_settings(
        TelemetrySettings("test"), span_processors=[SimpleSpanProcessor(spans)], metric_readers=[metrics]
    )
    yield Recorded(telemetry, spans, metrics)
    telemetry.shutdown()


async def test_server_spans_record_the_status_and_only_server_faults_are_errors(recorded: Recorded) -> None:
    tools = await create_tools(dataclasses.replace(ToolSettings(), port=0), telemetry=recorded.telemetry)
    reasoner_settings = dataclasses.replace(
        ReasonerSettings(), port=0, base_url=f"http://127.0.0.1:{free_port()}/v1", max_retries=0
    )
    reasoner = await create_reasoner(reasoner_settings, telemetry=recorded.telemetry)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{tools.port}") as channel:
            with pytest.raises(grpc.aio.AioRpcError) as bad_batch:
                await _drain(tools_pb2_grpc.ToolServiceStub(channel).Execute(tools_pb2.ExecuteRequest()))
            health = health_pb2_grpc.HealthStub(channel)
            await health.Check(health_pb2.HealthCheckRequest(service=""))
        async with grpc.aio.insecure_channel(f"127.0.0.1:{reasoner.port}") as channel:
            params = reasoner_pb2.CompletionParams(messages=[common_pb2.Message(role=common_pb2.ROLE_USER)])
            with pytest.raises(grpc.aio.AioRpcError) as unreachable:
                await reasoner_pb2_grpc.ReasonerStub(channel).Step(reasoner_pb2.StepRequest(params=params))
    finally:
        await tools.aclose(0)
        await reasoner.aclose(0)
    assert bad_batch.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert unreachable.value.code() == grpc.StatusCode.UNAVAILABLE

    execute = recorded.span("agentloop.v1.ToolService/Execute")
    assert execute.kind == SpanKind.SERVER
    assert execute.attributes is not None
    assert execute.attributes["rpc.grpc.status_code"] == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert execute.status.status_code == StatusCode.UNSET  # the caller's mistake, not the server's

    step = recorded.span("agentloop.v1.Reasoner/Step")
    assert step.attributes is not None
    assert step.attributes["rpc.grpc.status_code"] == grpc.StatusCode.UNAVAILABLE.value[0]
    assert step.status.status_code == StatusCode.ERROR
    chat = recorded.span("chat scripted")
    assert chat.parent is not None
    assert chat.parent.span_id == step.context.span_id
    assert chat.attributes is not None
    assert chat.attributes["error.type"] == "APIConnectionError"
    assert chat.status.status_code == StatusCode.ERROR

    names = {s.name for s in recorded.spans.get_finished_spans()}
    assert not any(n.startswith("grpc.") for n in names), names  # health checks are not traced


async def test_error_results_mark_tool_spans_and_count_by_tool_and_kind(recorded: Recorded) -> None:
    tools = await create_tools(dataclasses.replace(ToolSettings(), port=0), telemetry=recorded.telemetry)
    calls = [
        common_pb2.ToolCall(id="c1", name="calculator", arguments_json='{"expression": "1/0"}'),
        common_pb2.ToolCall(id="c2", name="no_such_tool", arguments_json="{}"),
        common_pb2.ToolCall(id="c3", name="calculator", arguments_json='{"expression": "2+2"}'),
    ]
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{tools.port}") as channel:
            stub = tools_pb2_grpc.ToolServiceStub(channel)
            events = await _drain(stub.Execute(tools_pb2.ExecuteRequest(calls=calls)))
    finally:
        await tools.aclose(0)
    results = {e.finished.tool_call_id: e.finished for e in events if e.HasField("finished")}
    assert results["c1"].is_error
    assert results["c2"].is_error
    assert not results["c3"].is_error
    by_call = {
        s.attributes["gen_ai.tool.call.id"]: s
        for s in recorded.spans.get_finished_spans()
        if s.name.startswith("execute_tool ") and s.attributes is not None
    }
    assert by_call["c2"].name == "execute_tool no_such_tool"
    assert by_call["c2"].attributes is not None
    assert by_call["c2"].attributes["error.type"] == "unknown_tool"
    assert by_call["c2"].status.status_code == StatusCode.ERROR
    assert by_call["c3"].attributes is not None
    assert "error.type" not in by_call["c3"].attributes
    assert by_call["c3"].status.status_code == StatusCode.UNSET
    errors = {(a["tool"], a["kind"]): v for a, v in recorded.points("agentloop.tool.errors")}
    assert errors[("(unknown)", "unknown_tool")] == 1
    assert sum(v for (tool, _), v in errors.items() if tool == "calculator") == 1


async def test_a_failed_run_is_counted_and_its_span_says_why(recorded: Recorded, tmp_path: Path) -> None:
    tools = await create_tools(dataclasses.replace(ToolSettings(), port=0))
    settings = dataclasses.replace(
        GatewaySettings(),
        port=0,
        reasoner_addr=f"127.0.0.1:{free_port()}",
        tools_addr=f"127.0.0.1:{tools.port}",
        rpc_attempts=2,
        rpc_backoff_s=0.01,
        rpc_wait_s=0.5,
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'agentloop.db'}",
    )
    gateway = await create_gateway(settings, telemetry=recorded.telemetry)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{gateway.port}") as channel:
            request = agent_pb2.RunRequest(input="hello", user_id="ana")
            events = [r.event async for r in agent_pb2_grpc.AgentStub(channel).Run(request, timeout=30)]
    finally:
        await gateway.aclose(0)
        await tools.aclose(0)
    assert events[-1].WhichOneof("event") == "error"
    run = recorded.span("invoke_agent agentloop")
    assert run.attributes is not None
    assert run.attributes["agentloop.run.status"] == "failed"
    assert run.attributes["error.type"] == "UNAVAILABLE"
    assert run.status.status_code == StatusCode.ERROR
    agent = recorded.span("node agent")
    assert agent.parent is not None
    assert agent.parent.span_id == run.context.span_id
    assert agent.status.status_code == StatusCode.ERROR
    assert recorded.points("agentloop.runs") == [({"status": "failed"}, 1)]
    assert recorded.points("agentloop.runs.active") == [({}, 0)]
    assert {a["node"] for a, _ in recorded.points("agentloop.step.duration")} >= {"init_state", "agent"}


async def _drain(call: Any) -> list[Any]:
    return [event async for event in call]
