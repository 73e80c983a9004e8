"""MCP servers' tools served by the ToolService, against real MCP servers written with the SDK.

A stdio server (tests/fixtures/mcp_stdio_server.py) runs as a subprocess of
the ToolService; a streamable-HTTP server (tests/fixtures/mcp_http_server.py)
runs as a separate process the tests can kill and restart.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from agentloop.kernel.serving import Server
from agentloop.kernel.settings import TelemetrySettings, ToolSettings
from agentloop.kernel.telemetry import Telemetry
from agentloop.kernel.wellknown import duration
from agentloop.scripted_model import Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2, common_pb2, tools_pb2, tools_pb2_grpc
from tests.support.bait import SECRET, bait_server
from tests.support.processes import free_port
from tests.support.stack import final_of, start_stack
from tests.support.waiting import assert_eventually
from tool_svc import ToolRegistry, tool
from tool_svc.mcp_client import mcp_servers
from tool_svc.mcp_config import parse_mcp_config
from tool_svc.service import create_server

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def accepting(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


class HttpMcpServer:
    """A streamable-HTTP fixture server (``script`` PORT) as a process on a fixed port, restartable."""

    def __init__(self, log_path: Path, script: str = "mcp_http_server.py") -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self._script = FIXTURES / script
        self._log = log_path.open("ab")
        self._process: subprocess.Popen[bytes] | None = None

    def spawn(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, str(self._script), str(self.port)],
            stdout=self._log,
            stderr=self._log,
        )

    async def start(self) -> None:
        self.spawn()
        await assert_eventually(
            lambda: accepting(self.port), timeout_s=30, message="MCP HTTP server did not start"
        )

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=10)
            self._process = None

    def close(self) -> None:
        self.stop()
        self._log.close()


@pytest.fixture
async def http_server(tmp_path: Path) -> AsyncIterator[HttpMcpServer]:
    server = HttpMcpServer(tmp_path / "mcp-http.log")
    await server.start()
    try:
        yield server
    finally:
        server.close()


def stdio_entry() -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(FIXTURES / "mcp_stdio_server.py")]}


def write_config(path: Path, servers: dict[str, Any]) -> str:
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return str(path)


@tool
def local_note(text: str) -> str:
    """A Python tool served next to the MCP tools."""
    return f"noted: {text}"


@pytest.fixture
def config_path(tmp_path: Path, http_server: HttpMcpServer) -> str:
    return write_config(
        tmp_path / "mcp.json",
        {"calc": stdio_entry(), "web": {"url": http_server.url, "ping_interval_s": 0.2}},
    )


async def start_tools(config: str) -> Server:
    settings = dataclasses.replace(ToolSettings(), port=0, mcp_config=config)
    return await create_server(settings, ToolRegistry([local_note]))


async def execute_batch(
    port: int, calls: list[tuple[str, dict[str, Any]]], timeout_s: float = 20
) -> dict[str, common_pb2.ToolResult]:
    """Run calls as one Execute batch; results by call id ("c0", "c1", ...)."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = tools_pb2_grpc.ToolServiceStub(channel)
        request = tools_pb2.ExecuteRequest(
            calls=[
                common_pb2.ToolCall(id=f"c{i}", name=name, arguments_json=json.dumps(arguments))
                for i, (name, arguments) in enumerate(calls)
            ],
            timeout=duration(timeout_s) if timeout_s else None,
        )
        responses = [r async for r in stub.Execute(request, timeout=60)]
    return {r.finished.tool_call_id: r.finished for r in responses if r.WhichOneof("event") == "finished"}


async def execute(port: int, name: str, arguments: dict[str, Any]) -> common_pb2.ToolResult:
    return (await execute_batch(port, [(name, arguments)]))["c0"]


async def list_tools(port: int) -> dict[str, common_pb2.ToolSpec]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        reply = await tools_pb2_grpc.ToolServiceStub(channel).ListTools(
            tools_pb2.ListToolsRequest(), timeout=10
        )
    return {spec.name: spec for spec in reply.tools}


async def test_list_tools_shows_both_servers_tools_namespaced_with_schemas(config_path: str) -> None:
    handle = await start_tools(config_path)
    try:
        specs = await list_tools(handle.port)
    finally:
        await handle.aclose(0)

    assert sorted(specs) == [
        "calc__add",
        "calc__crash",
        "calc__explode",
        "calc__sleep_for",
        "local_note",
        "web__shout",
        "web__word_count",
    ]
    add = json.loads(specs["calc__add"].parameters_json_schema)
    assert add["type"] == "object"
    assert add["properties"]["a"]["type"] == add["properties"]["b"]["type"] == "integer"
    assert sorted(add["required"]) == ["a", "b"]
    assert specs["calc__add"].description == "Add two integers."
    shout = json.loads(specs["web__shout"].parameters_json_schema)
    assert shout["properties"]["text"]["type"] == "string"
    # "word.count" has a character model APIs refuse in tool names; it is served as word_count.
    assert specs["web__word_count"].description.startswith("Count the words")


async def test_agent_calls_a_stdio_and_an_http_mcp_tool_in_one_step(
    tmp_path: Path, http_server: HttpMcpServer
) -> None:
    configs = parse_mcp_config(
        {"mcpServers": {"calc": stdio_entry(), "web": {"url": http_server.url}}}, "test", {}
    )
    script = Script(
        scenarios=(
            Scenario(
                match="both",
                turns=(
                    Turn(
                        tool_calls=(
                            ScriptedToolCall("calc__add", {"a": 2, "b": 40}),
                            ScriptedToolCall("web__shout", {"text": "hello"}),
                        )
                    ),
                    Turn(content="Sum {{tool:calc__add}}, shout {{tool:web__shout}}."),
                ),
            ),
            Scenario(
                match="explode",
                turns=(
                    Turn(tool_calls=(ScriptedToolCall("calc__explode", {"reason": "testing"}),)),
                    Turn(content="It failed: {{last_tool}}"),
                ),
            ),
        )
    )
    registry = ToolRegistry()
    async with mcp_servers(registry, configs):
        stack = await start_stack(script, registry)
        try:
            events = await stack.run("call both servers")
            failed = await stack.run("explode please")
        finally:
            await stack.close()

    final = final_of(events)
    ends = [e.tool_end for e in events if e.WhichOneof("event") == "tool_end"]
    assert {end.name: end.result.content for end in ends} == {"calc__add": "42", "web__shout": "HELLO"}
    assert not any(end.result.is_error for end in ends)
    assert final.metadata.steps_taken == 1  # both MCP calls ran in the one step
    assert final.final_reply == "Sum 42, shout HELLO."

    # A tool that raises on its server becomes an error result the model reads; the run completes.
    result = next(e.tool_end.result for e in failed if e.WhichOneof("event") == "tool_end")
    assert result.is_error
    assert result.error_kind == common_pb2.TOOL_ERROR_KIND_EXCEPTION
    assert "Error executing tool explode" in result.content
    reply = final_of(failed)
    assert reply.metadata.stop_reason == agent_pb2.STOP_REASON_COMPLETED
    assert "Error executing tool explode" in reply.final_reply


async def test_a_server_that_cannot_start_is_one_log_line_and_the_others_serve(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = write_config(
        tmp_path / "mcp.json",
        {"ghost": {"command": "agentloop-no-such-mcp-server"}, "calc": stdio_entry()},
    )
    with caplog.at_level(logging.INFO):
        handle = await start_tools(config)
        try:
            specs = await list_tools(handle.port)
            result = await execute(handle.port, "calc__add", {"a": 1, "b": 1})
        finally:
            await handle.aclose(0)

    assert sorted(specs) == ["calc__add", "calc__crash", "calc__explode", "calc__sleep_for", "local_note"]
    assert (result.is_error, result.content) == (False, "2")
    about_ghost = [r for r in caplog.records if "ghost" in r.getMessage() and r.levelno >= logging.WARNING]
    assert len(about_ghost) == 1, [r.getMessage() for r in about_ghost]
    line = about_ghost[0]
    assert "\n" not in line.getMessage()
    assert line.exc_info is None
    assert "'agentloop-no-such-mcp-server' was not found" in line.getMessage()
    assert "failed to start" in line.getMessage()


async def test_http_server_restarted_is_reconnected_and_calls_work_again(
    config_path: str, http_server: HttpMcpServer
) -> None:
    handle = await start_tools(config_path)
    try:
        before = await execute(handle.port, "web__shout", {"text": "before"})
        assert (before.is_error, before.content) == (False, "BEFORE")

        http_server.stop()
        down = await execute(handle.port, "web__shout", {"text": "down"})
        assert down.is_error
        assert "MCP server 'web'" in down.content

        await http_server.start()
        outcomes: list[common_pb2.ToolResult] = []

        async def probe() -> None:
            outcomes.append(await execute(handle.port, "web__shout", {"text": "again"}))

        async def works_again() -> bool:
            await probe()
            return not outcomes[-1].is_error

        deadline = asyncio.get_running_loop().time() + 30
        while not await works_again():
            assert asyncio.get_running_loop().time() < deadline, outcomes[-1].content
            await asyncio.sleep(0.1)
        assert outcomes[-1].content == "AGAIN"
        # The stdio server was never disturbed.
        still = await execute(handle.port, "calc__add", {"a": 3, "b": 4})
        assert (still.is_error, still.content) == (False, "7")
    finally:
        await handle.aclose(0)


async def test_mcp_calls_run_in_parallel_under_the_executors_timeout(tmp_path: Path) -> None:
    handle = await start_tools(write_config(tmp_path / "mcp.json", {"calc": stdio_entry()}))
    try:
        results = await execute_batch(
            handle.port,
            [
                ("calc__sleep_for", {"seconds": 30}),
                ("calc__add", {"a": 1, "b": 2}),
                ("calc__add", {"a": 3, "b": 4}),
            ],
            timeout_s=1,
        )
        # The abandoned call did not break the session: the server still answers.
        after = await execute(handle.port, "calc__add", {"a": 5, "b": 6})
    finally:
        await handle.aclose(0)

    assert results["c0"].is_error
    assert results["c0"].error_kind == common_pb2.TOOL_ERROR_KIND_TIMEOUT
    assert [(results[c].is_error, results[c].content) for c in ("c1", "c2")] == [(False, "3"), (False, "7")]
    assert (after.is_error, after.content) == (False, "11")


async def test_a_stdio_server_that_dies_is_started_again(tmp_path: Path) -> None:
    handle = await start_tools(write_config(tmp_path / "mcp.json", {"calc": stdio_entry()}))
    try:
        crashed = await execute(handle.port, "calc__crash", {})
        outcomes: list[common_pb2.ToolResult] = []
        deadline = asyncio.get_running_loop().time() + 30
        while True:
            outcomes.append(await execute(handle.port, "calc__add", {"a": 20, "b": 22}))
            if not outcomes[-1].is_error:
                break
            assert "MCP server 'calc'" in outcomes[-1].content
            assert asyncio.get_running_loop().time() < deadline, outcomes[-1].content
            await asyncio.sleep(0.1)
    finally:
        await handle.aclose(0)

    assert crashed.is_error
    assert "MCP server 'calc'" in crashed.content
    assert outcomes[-1].content == "42"


async def test_mcp_calls_get_the_executors_tool_spans(tmp_path: Path) -> None:
    spans = InMemorySpanExporter()
    telemetry = Telemetry.from_settings(
        TelemetrySettings("test"), span_processors=[SimpleSpanProcessor(spans)]
    )
    settings = dataclasses.replace(
        ToolSettings(), port=0, mcp_config=write_config(tmp_path / "mcp.json", {"calc": stdio_entry()})
    )
    handle = await create_server(settings, ToolRegistry(), telemetry=telemetry)
    try:
        await execute_batch(
            handle.port, [("calc__add", {"a": 1, "b": 2}), ("calc__explode", {"reason": "x"})]
        )
    finally:
        await handle.aclose(0)
        telemetry.shutdown()

    by_name = {span.name: span for span in spans.get_finished_spans()}
    add, explode = by_name["execute_tool calc__add"], by_name["execute_tool calc__explode"]
    assert add.attributes is not None
    assert add.attributes["gen_ai.tool.name"] == "calc__add"
    assert add.status.status_code == StatusCode.UNSET
    assert explode.status.status_code == StatusCode.ERROR
    assert explode.attributes is not None
    assert explode.attributes["error.type"] == "exception"


async def test_serve_tools_with_an_mcp_config_logs_one_line_for_a_server_that_cannot_start(
    tmp_path: Path,
) -> None:
    config = write_config(
        tmp_path / "mcp.json", {"ghost": {"command": "agentloop-no-such-mcp-server"}, "calc": stdio_entry()}
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AGENTLOOP_MCP_CONFIG")}
    env["AGENTLOOP_SQL_DATABASE"] = str(tmp_path / "sample.db")
    process = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).with_name("agentloop")),
        *("serve", "tools", "--port", "0", "--mcp-config", config),
        cwd=tmp_path,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
        assert line.startswith("ToolService listening on port "), line
        port = int(line.rsplit(" ", 1)[1])
        specs = await list_tools(port)
        result = await execute(port, "calc__add", {"a": 2, "b": 2})
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(process.communicate(), 30)

    assert process.returncode == 0
    assert {"calc__add", "calculator"} <= set(specs)
    assert (result.is_error, result.content) == (False, "4")
    about_ghost = [line for line in stderr.decode().splitlines() if "ghost" in line]
    assert len(about_ghost) == 1, stderr.decode()
    assert "MCP server 'ghost' (stdio) failed to start" in about_ghost[0]


# --- what a server sends that the service must not take as it is ----------------------------


def fixture_entry(script: str, *args: str, **options: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(FIXTURES / script), *args], **options}


async def test_tools_with_unusable_schemas_are_left_out_and_the_others_serve(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with bait_server() as bait, caplog.at_level(logging.INFO):
        config = write_config(
            tmp_path / "mcp.json", {"bad": fixture_entry("mcp_bad_schemas_server.py", bait.url)}
        )
        handle = await start_tools(config)
        try:
            specs = await list_tools(handle.port)
            echoed = await execute(handle.port, "bad__echo", {"text": "still here"})
            remote = await execute(handle.port, "bad__remote_ref", {"name": "x"})
        finally:
            await handle.aclose(0)

    assert sorted(specs) == ["bad__echo", "local_note"]
    assert (echoed.is_error, echoed.content) == (False, "still here")
    assert remote.error_kind == common_pb2.TOOL_ERROR_KIND_UNKNOWN_TOOL
    assert bait.requests == []  # nothing a schema names was fetched
    assert SECRET not in json.dumps([r.getMessage() for r in caplog.records])
    left_out = {
        tool: [r.getMessage() for r in caplog.records if f"tool {tool!r} is left out" in r.getMessage()]
        for tool in ("remote_ref", "deep")
    }
    assert [len(lines) for lines in left_out.values()] == [1, 1], left_out
    reason = f"its input schema refers outside itself: $ref {bait.url!r}"
    assert left_out["remote_ref"][0].startswith(f"MCP server 'bad': tool 'remote_ref' is left out: {reason}")
    assert "nests more than 64 levels deep" in left_out["deep"][0]


async def test_a_run_works_beside_an_mcp_tool_whose_schema_the_reasoner_would_refuse(tmp_path: Path) -> None:
    configs = parse_mcp_config(
        {"mcpServers": {"bad": fixture_entry("mcp_bad_schemas_server.py")}}, "test", {}
    )
    script = Script(
        scenarios=(
            Scenario(
                match="echo",
                turns=(
                    Turn(tool_calls=(ScriptedToolCall("bad__echo", {"text": "hi"}),)),
                    Turn(content="{{last_tool}}"),
                ),
            ),
        )
    )
    registry = ToolRegistry()
    async with mcp_servers(registry, configs):
        stack = await start_stack(script, registry)
        try:
            final = final_of(await stack.run("echo please"))
            offered = {tool["function"]["name"] for tool in stack.model.requests[0]["tools"]}
        finally:
            await stack.close()

    assert final.metadata.stop_reason == agent_pb2.STOP_REASON_COMPLETED
    assert final.final_reply == "hi"
    assert offered == {"bad__echo"}


async def test_a_long_call_on_a_server_that_answers_one_request_at_a_time_outlives_the_keep_alive(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Keep-alive every 0.2 s, each probe given 5 s: the call outlives many periods and a probe's timeout.
    entry = fixture_entry("mcp_busy_server.py", ping_interval_s=0.2, connect_timeout_s=5)
    with caplog.at_level(logging.INFO):
        handle = await start_tools(write_config(tmp_path / "mcp.json", {"busy": entry}))
        try:
            held = await execute(handle.port, "busy__hold", {"seconds": 6})
            after = await execute(handle.port, "busy__echo", {"text": "after"})
        finally:
            await handle.aclose(0)

    assert (held.is_error, held.content) == (False, "held 6 s")
    assert (after.is_error, after.content) == (False, "after")
    dropped = [r.getMessage() for r in caplog.records if "disconnected" in r.getMessage()]
    assert dropped == []


HUGE_MB = 20


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_huge_result_is_a_too_large_error_and_the_session_stays(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, transport: str
) -> None:
    http = HttpMcpServer(tmp_path / "busy-http.log", "mcp_busy_server.py")
    if transport == "http":
        await http.start()
        entry: dict[str, Any] = {"url": http.url}
    else:
        entry = fixture_entry("mcp_busy_server.py")
    try:
        with caplog.at_level(logging.INFO):
            handle = await start_tools(write_config(tmp_path / "mcp.json", {"busy": entry}))
            try:
                tracemalloc.start()
                try:
                    huge = await execute(handle.port, "busy__big", {"megabytes": HUGE_MB})
                    _, peak = tracemalloc.get_traced_memory()
                finally:
                    tracemalloc.stop()
                fits = await execute(handle.port, "busy__big", {"megabytes": 0.5})
                after = await execute(handle.port, "busy__echo", {"text": "after"})
            finally:
                await handle.aclose(0)
    finally:
        http.close()

    assert huge.is_error
    assert huge.error_kind == common_pb2.TOOL_ERROR_KIND_TOO_LARGE
    assert re.match(r"the result of busy__big is (\d+) bytes or more", huge.content)
    assert "a tool result may hold at most 1048576 bytes" in huge.content
    # The reply was never held whole in the service: far less memory than its size was allocated.
    assert peak < HUGE_MB * 1024 * 1024 // 2, peak
    if transport == "stdio":  # the guard counted the whole line
        assert int(huge.content.split()[5]) > HUGE_MB * 1024 * 1024
    assert (fits.is_error, len(fits.content)) == (False, 512 * 1024)
    assert (after.is_error, after.content) == (False, "after")
    assert not [r.getMessage() for r in caplog.records if "disconnected" in r.getMessage()]
