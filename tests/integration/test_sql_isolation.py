"""The SQL tools through a real ToolService: a locked-down surface and a bounded share of the process."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from agentloop.kernel.serving import Server
from agentloop.kernel.settings import ToolSettings
from agentloop.kernel.wellknown import duration
from agentloop.v1 import common_pb2, tools_pb2, tools_pb2_grpc
from tool_svc import ToolRegistry
from tool_svc.builtins.calculator import calculator
from tool_svc.builtins.sql import sql_tools
from tool_svc.service import create_server

pytestmark = pytest.mark.integration

ENDLESS = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n"
RUNAWAY_QUERIES = 16


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[Server]:
    registry = ToolRegistry([calculator, *sql_tools(tmp_path / "shop.db", row_limit=5, time_limit_s=0.5)])
    handle = await create_server(dataclasses.replace(ToolSettings(), port=0), registry)
    try:
        yield handle
    finally:
        await handle.aclose(0)


def call(call_id: str, name: str, arguments: dict[str, object]) -> common_pb2.ToolCall:
    return common_pb2.ToolCall(id=call_id, name=name, arguments_json=json.dumps(arguments))


async def results(
    stub: tools_pb2_grpc.ToolServiceStub, calls: list[common_pb2.ToolCall], timeout_s: float = 10
) -> list[common_pb2.ToolResult]:
    request = tools_pb2.ExecuteRequest(calls=calls, timeout=duration(timeout_s), max_concurrency=len(calls))
    return [
        r.finished async for r in stub.Execute(request, timeout=60) if r.WhichOneof("event") == "finished"
    ]


async def test_the_sql_surface_refuses_fts3_tokenizer_and_vacuum(service: Server) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{service.port}") as channel:
        stub = tools_pb2_grpc.ToolServiceStub(channel)
        finished = await results(
            stub,
            [
                call("pointer", "sql_query", {"query": "SELECT hex(fts3_tokenizer('simple'))"}),
                call("vacuum", "sql_validate", {"query": "VACUUM"}),
                call("into", "sql_validate", {"query": "VACUUM INTO 'copy.db'"}),
                call("fine", "sql_query", {"query": "SELECT count(*) AS n FROM orders"}),
            ],
        )
    by_id = {result.tool_call_id: result for result in finished}
    assert by_id["pointer"].is_error
    assert by_id["pointer"].content.startswith(
        "ValueError: SQL error: not authorized to use function: fts3_tokenizer"
    )
    for statement in ("vacuum", "into"):
        assert by_id[statement].is_error
        assert "only SELECT queries" in by_id[statement].content
    assert json.loads(by_id["fine"].content)["rows"] == [[30]]


async def test_runaway_queries_do_not_starve_a_calculator_call(service: Server) -> None:
    finished: list[common_pb2.ToolResult] = []
    async with grpc.aio.insecure_channel(f"127.0.0.1:{service.port}") as channel:
        stub = tools_pb2_grpc.ToolServiceStub(channel)
        request = tools_pb2.ExecuteRequest(
            calls=[call(f"q{i}", "sql_query", {"query": ENDLESS}) for i in range(RUNAWAY_QUERIES)],
            timeout=duration(1.5),
            max_concurrency=RUNAWAY_QUERIES,
        )
        started = asyncio.Event()

        async def runaway() -> None:
            async for response in stub.Execute(request, timeout=60):
                if response.WhichOneof("event") == "finished":
                    finished.append(response.finished)
                else:
                    started.set()

        queries = asyncio.create_task(runaway())
        await started.wait()
        finished.extend(await results(stub, [call("calc", "calculator", {"expression": "6 * 7"})]))
        await queries

    assert [r.tool_call_id for r in finished[:1]] == ["calc"], [r.tool_call_id for r in finished]
    assert finished[0].content == "42"
    stopped = [r for r in finished[1:] if r.error_kind == common_pb2.TOOL_ERROR_KIND_EXCEPTION]
    timed_out = [r for r in finished[1:] if r.error_kind == common_pb2.TOOL_ERROR_KIND_TIMEOUT]
    assert all("ran longer than 0.5 s and was stopped" in r.content for r in stopped)
    assert len(stopped) + len(timed_out) == RUNAWAY_QUERIES
