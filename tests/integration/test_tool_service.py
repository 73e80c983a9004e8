"""The ToolService over a real gRPC server and channel on a loopback port."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from agentloop.kernel.serving import Server
from agentloop.kernel.settings import ToolSettings
from agentloop.kernel.wellknown import duration
from agentloop.v1 import common_pb2, tools_pb2, tools_pb2_grpc
from tool_svc import ToolRegistry, tool
from tool_svc.builtins import default_registry
from tool_svc.service import SERVICE_NAME, create_server

pytestmark = pytest.mark.integration

Kind = common_pb2.ToolErrorKind


@dataclass
class Probe:
    """Lets tests observe what the tools did, from the same process."""

    arrived: dict[str, asyncio.Event] = field(
        default_factory=lambda: {"left": asyncio.Event(), "right": asyncio.Event()}
    )
    blocked: asyncio.Event = field(default_factory=asyncio.Event)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)


def build_registry(settings: ToolSettings, probe: Probe) -> ToolRegistry:
    registry = default_registry(settings)

    @tool
    async def meet(side: str) -> str:
        """Finishes only when the other side runs at the same time."""
        other = "right" if side == "left" else "left"
        probe.arrived[side].set()
        await probe.arrived[other].wait()
        return f"{side} met {other}"

    @tool
    async def block() -> str:
        """Waits until cancelled."""
        probe.blocked.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            probe.cancelled.set()
            raise
        return "unreachable"

    @tool
    def explode(reason: str) -> str:
        """Always fails."""
        raise RuntimeError(reason)

    for fn in (meet, block, explode):
        registry.register(fn)
    return registry


@dataclass
class Service:
    handle: Server
    channel: grpc.aio.Channel
    probe: Probe

    @property
    def stub(self) -> tools_pb2_grpc.ToolServiceStub:
        return tools_pb2_grpc.ToolServiceStub(self.channel)

    async def execute(
        self, *calls: common_pb2.ToolCall, timeout_seconds: float = 0
    ) -> list[tools_pb2.ExecuteResponse]:
        request = tools_pb2.ExecuteRequest(
            calls=calls, timeout=duration(timeout_seconds) if timeout_seconds else None
        )
        return [event async for event in self.stub.Execute(request, timeout=30)]


def trigger_name(rule: common_pb2.NextStepRule) -> str:
    return common_pb2.NextStepTrigger.Name(rule.trigger)


@pytest.fixture
def settings(tmp_path: Path) -> ToolSettings:
    return ToolSettings(
        host="127.0.0.1",
        port=0,
        timeout_s=0.5,
        max_concurrency=4,
        modules=("tests.fixtures.custom_tools",),
        sql_database=str(tmp_path / "shop.db"),
        sql_row_limit=3,
    )


@pytest.fixture
async def service(settings: ToolSettings) -> AsyncIterator[Service]:
    probe = Probe()
    handle = await create_server(settings, build_registry(settings, probe))
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{handle.port}")
    try:
        yield Service(handle, channel, probe)
    finally:
        await channel.close()
        await handle.aclose(0)


def call(call_id: str, name: str, arguments: dict[str, object] | str | None = None) -> common_pb2.ToolCall:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments) if arguments is not None else ""
    return common_pb2.ToolCall(id=call_id, name=name, arguments_json=text)


def finished(events: list[tools_pb2.ExecuteResponse]) -> dict[str, common_pb2.ToolResult]:
    return {e.finished.tool_call_id: e.finished for e in events if e.WhichOneof("event") == "finished"}


async def test_list_tools(service: Service) -> None:
    response = await service.stub.ListTools(tools_pb2.ListToolsRequest(), timeout=10)
    names = [spec.name for spec in response.tools]
    assert names == sorted(names)
    assert {
        "block",
        "calculator",
        "current_time",
        "explode",
        "file_note",
        "meet",
        "shout",
        "sql_describe_table",
        "sql_list_tables",
        "sql_query",
        "sql_validate",
        "word_count",
    } == set(names)
    calculator = next(spec for spec in response.tools if spec.name == "calculator")
    schema = json.loads(calculator.parameters_json_schema)
    assert schema["required"] == ["expression"]
    assert schema["additionalProperties"] is False


async def test_list_tools_filters_by_name(service: Service) -> None:
    request = tools_pb2.ListToolsRequest(names=["word_count", "calculator", "nope"])
    response = await service.stub.ListTools(request, timeout=10)
    assert [spec.name for spec in response.tools] == ["calculator", "word_count"]


async def test_list_tools_publishes_next_steps_injected_parameters_and_approval(service: Service) -> None:
    response = await service.stub.ListTools(
        tools_pb2.ListToolsRequest(names=["file_note", "sql_validate", "sql_query", "calculator"]), timeout=10
    )
    specs = {spec.name: spec for spec in response.tools}
    note = specs["file_note"]
    assert note.requires_approval
    assert list(note.injected_parameters) == ["history", "user", "thread", "run", "meta"]
    schema = json.loads(note.parameters_json_schema)
    assert list(schema["properties"]) == ["title"]
    assert schema["additionalProperties"] is False
    assert [(trigger_name(rule), rule.next_step) for rule in note.next_steps] == [
        ("NEXT_STEP_TRIGGER_SUCCESS", "confirm_note"),
        ("NEXT_STEP_TRIGGER_ERROR", "report_failure"),
    ]
    assert [
        (common_pb2.NextStepTrigger.Name(rule.trigger), rule.next_step)
        for rule in specs["sql_validate"].next_steps
    ] == [
        ("NEXT_STEP_TRIGGER_SUCCESS", "run_sql"),
        ("NEXT_STEP_TRIGGER_ERROR", "analyze_validation_error"),
    ]
    assert "sql_query" in specs["sql_validate"].next_steps[0].hint
    assert [
        (common_pb2.NextStepTrigger.Name(rule.trigger), rule.next_step)
        for rule in specs["sql_query"].next_steps
    ] == [
        ("NEXT_STEP_TRIGGER_SUCCESS", "summarize_final_answer"),
        ("NEXT_STEP_TRIGGER_ERROR", "analyze_error"),
    ]
    calculator = specs["calculator"]
    assert not calculator.requires_approval
    assert list(calculator.injected_parameters) == []
    assert list(calculator.next_steps) == []


INJECTED = common_pb2.InjectedContext(
    user_id="user-42",
    thread_id="thread-1",
    run_id="run-9",
    conversation_json=json.dumps(
        [
            {"role": "user", "content": "Remind me to call Ada."},
            {"role": "assistant", "content": "Filing a note."},
        ]
    ),
    run_metadata_json=json.dumps({"step": 3, "max_steps": 10, "tools_used": [], "llm_calls": 2}),
)


async def test_execute_fills_injected_parameters_from_the_request(service: Service) -> None:
    request = tools_pb2.ExecuteRequest(
        calls=[
            call("n", "file_note", {"title": "Call Ada"}),
            call("w", "word_count", {"text": "no injection here"}),
            call("forged", "file_note", {"title": "x", "user": "admin"}),
        ],
        timeout=duration(10),
        injected=INJECTED,
    )
    done = finished([event async for event in service.stub.Execute(request, timeout=30)])
    assert not done["n"].is_error, done["n"].content
    assert json.loads(done["n"].content) == {
        "title": "Call Ada",
        "owner": "user-42",
        "thread": "thread-1",
        "run": "run-9",
        "step": 3,
        "messages": 2,
        "user_said": ["Remind me to call Ada."],
    }
    assert done["w"].content == "3"
    assert done["forged"].error_kind == Kind.TOOL_ERROR_KIND_INVALID_ARGUMENTS
    assert "unknown property 'user'; allowed properties: title" in done["forged"].content


async def test_execute_without_injected_context_gives_empty_values(service: Service) -> None:
    done = finished(await service.execute(call("n", "file_note", {"title": "t"}), timeout_seconds=10))
    assert json.loads(done["n"].content) == {
        "title": "t",
        "owner": "",
        "thread": "",
        "run": "",
        "step": None,
        "messages": 0,
        "user_said": [],
    }


@pytest.mark.parametrize(
    ("injected", "details"),
    [
        (
            common_pb2.InjectedContext(conversation_json="[{"),
            "injected.conversation_json: is not valid JSON",
        ),
        (
            common_pb2.InjectedContext(conversation_json='"hello"'),
            "injected.conversation_json: must be a JSON array, got a string",
        ),
        (
            common_pb2.InjectedContext(run_metadata_json="[1]"),
            "injected.run_metadata_json: must be a JSON object, got an array",
        ),
    ],
)
async def test_unusable_injected_context_is_invalid_argument(
    service: Service, injected: common_pb2.InjectedContext, details: str
) -> None:
    request = tools_pb2.ExecuteRequest(calls=[call("w", "word_count", {"text": "a"})], injected=injected)
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        _ = [event async for event in service.stub.Execute(request, timeout=10)]
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert raised.value.details().startswith(details)


async def test_sql_validate_then_query(service: Service) -> None:
    query = "SELECT name, price FROM products ORDER BY price DESC"
    done = finished(
        await service.execute(
            call("v", "sql_validate", {"query": query}),
            call("bad", "sql_validate", {"query": "SELECT price FROM product"}),
            call("write", "sql_validate", {"query": "UPDATE products SET price = 0"}),
            timeout_seconds=10,
        )
    )
    assert json.loads(done["v"].content) == {"valid": True, "columns": ["name", "price"]}
    assert done["bad"].is_error
    assert "no such table: product" in done["bad"].content
    assert done["write"].content.startswith("ValueError: the database is read-only")


async def test_parallel_calls_start_before_they_finish(service: Service) -> None:
    events = await service.execute(
        call("l", "meet", {"side": "left"}), call("r", "meet", {"side": "right"}), timeout_seconds=10
    )
    assert [e.WhichOneof("event") for e in events] == ["started", "started", "finished", "finished"]
    assert {e.started.tool_call_id for e in events[:2]} == {"l", "r"}
    assert events[0].started.name == "meet"
    done = finished(events)
    assert done["l"].content == "left met right"
    assert done["r"].content == "right met left"


async def test_builtins_and_user_module_tools_run(service: Service) -> None:
    done = finished(
        await service.execute(
            call("c", "calculator", {"expression": "1234 * 5678"}),
            call("w", "word_count", {"text": "one two  three"}),
            call("s", "shout", {"text": "hi"}),
            call("q", "sql_query", {"query": "SELECT id FROM customers ORDER BY id"}),
            call("t", "current_time", {"timezone": "Europe/Paris"}),
            timeout_seconds=10,
        )
    )
    assert done["c"].content == "7006652"
    assert done["w"].content == "3"
    assert done["s"].content == "HI (call s)"
    assert json.loads(done["q"].content) == {"columns": ["id"], "rows": [[1], [2], [3]], "truncated": True}
    assert done["t"].content[-6:] in {"+01:00", "+02:00"}
    assert not any(result.is_error for result in done.values())


async def test_every_error_kind_is_a_result_and_the_batch_completes(service: Service) -> None:
    events = await service.execute(
        call("unknown", "teleport"),
        call("malformed", "calculator", '{"expression": '),
        call("invalid", "calculator", {"expr": "1+1"}),
        call("timeout", "block"),
        call("exception", "explode", {"reason": "disk full"}),
        call("calc-error", "calculator", {"expression": "__import__('os')"}),
        call("fine", "calculator", {"expression": "2 ** 8"}),
    )
    done = finished(events)
    assert len(done) == 7
    assert sum(e.WhichOneof("event") == "started" for e in events) == 7
    expected = {
        "unknown": Kind.TOOL_ERROR_KIND_UNKNOWN_TOOL,
        "malformed": Kind.TOOL_ERROR_KIND_MALFORMED_ARGUMENTS,
        "invalid": Kind.TOOL_ERROR_KIND_INVALID_ARGUMENTS,
        "timeout": Kind.TOOL_ERROR_KIND_TIMEOUT,
        "exception": Kind.TOOL_ERROR_KIND_EXCEPTION,
        "calc-error": Kind.TOOL_ERROR_KIND_EXCEPTION,
        "fine": Kind.TOOL_ERROR_KIND_NONE,
    }
    assert {call_id: result.error_kind for call_id, result in done.items()} == expected
    assert done["fine"].content == "256"
    assert "available tools: block, calculator" in done["unknown"].content
    assert done["timeout"].content == "block did not finish within 0.5 s and was stopped"  # settings default
    assert done["exception"].content == "RuntimeError: disk full"
    assert "unknown function '__import__'" in done["calc-error"].content
    assert "unknown property 'expr'" in done["invalid"].content


async def test_request_timeout_overrides_the_default(service: Service) -> None:
    done = finished(await service.execute(call("b", "block"), timeout_seconds=0.05))
    assert done["b"].content == "block did not finish within 0.05 s and was stopped"


async def test_cancelling_the_rpc_cancels_the_tools(service: Service) -> None:
    stream = service.stub.Execute(tools_pb2.ExecuteRequest(calls=[call("b", "block")], timeout=duration(30)))
    first = await stream.read()
    assert first.WhichOneof("event") == "started"
    await service.probe.blocked.wait()
    stream.cancel()
    await asyncio.wait_for(service.probe.cancelled.wait(), 10)


def calls_(*ids_and_names: tuple[str, str]) -> list[common_pb2.ToolCall]:
    return [
        common_pb2.ToolCall(id=call_id, name=name, arguments_json="{}") for call_id, name in ids_and_names
    ]


@pytest.mark.parametrize(
    ("request_", "details"),
    [
        (tools_pb2.ExecuteRequest(), "calls: must contain at least one call"),
        (
            tools_pb2.ExecuteRequest(calls=calls_(("a", "x"), ("b", "x"), ("", "x"))),
            "calls[2].id: must not be empty",
        ),
        (tools_pb2.ExecuteRequest(calls=calls_(("a", "x"), ("b", ""))), "calls[1].name: must not be empty"),
        (
            tools_pb2.ExecuteRequest(calls=calls_(("a", "x"), ("b", "x"), ("c", "x"), ("a", "x"))),
            "calls[3].id: duplicates calls[0].id",
        ),
        (
            tools_pb2.ExecuteRequest(calls=calls_(("a", "x")), timeout=duration(-1)),
            "timeout: must not be negative",
        ),
        (
            tools_pb2.ExecuteRequest(calls=calls_(("a", "x")), max_concurrency=-2),
            "max_concurrency: must be >= 0",
        ),
        (
            tools_pb2.ExecuteRequest(calls=calls_(*((str(i), "x") for i in range(129)))),
            "calls: has 129 calls; at most 128 are allowed",
        ),
    ],
)
async def test_bad_batches_are_invalid_argument(
    service: Service, request_: tools_pb2.ExecuteRequest, details: str
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        _ = [event async for event in service.stub.Execute(request_, timeout=10)]
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert raised.value.details().startswith(details)


async def test_health_is_serving(service: Service) -> None:
    health = health_pb2_grpc.HealthStub(service.channel)
    for name in ("", SERVICE_NAME):
        response = await health.Check(health_pb2.HealthCheckRequest(service=name), timeout=10)
        assert response.status == health_pb2.HealthCheckResponse.SERVING
    assert SERVICE_NAME == "agentloop.v1.ToolService"


async def test_default_registry_when_none_is_given(settings: ToolSettings) -> None:
    handle = await create_server(settings)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{handle.port}") as channel:
            stub = tools_pb2_grpc.ToolServiceStub(channel)
            response = await stub.ListTools(tools_pb2.ListToolsRequest(), timeout=10)
            assert [spec.name for spec in response.tools] == [
                "calculator",
                "current_time",
                "file_note",
                "shout",
                "sql_describe_table",
                "sql_list_tables",
                "sql_query",
                "sql_validate",
                "word_count",
            ]
            request = tools_pb2.ExecuteRequest(calls=[call("t", "sql_list_tables")], timeout=duration(10))
            events = [event async for event in stub.Execute(request, timeout=10)]
            assert json.loads(finished(events)["t"].content) == [
                "customers",
                "order_items",
                "orders",
                "products",
            ]
    finally:
        await handle.aclose(0)


async def test_unloadable_module_fails_server_creation(settings: ToolSettings) -> None:
    broken = ToolSettings(
        port=0, modules=("tests.fixtures.no_such_module",), sql_database=settings.sql_database
    )
    with pytest.raises(ValueError, match=r"cannot find tool module 'tests\.fixtures\.no_such_module'"):
        await create_server(broken)


async def test_unusable_settings_fail_server_creation(settings: ToolSettings) -> None:
    with pytest.raises(ValueError, match="needs timeout_s > 0"):
        await create_server(dataclasses.replace(settings, timeout_s=0.0), ToolRegistry())
