"""A calculator call's latency on a ToolService busy with runaway SQL queries, against an idle one.

The ToolService runs in this process with its default tools (the SQL tools at
their default 2 s time limit) on a real gRPC port. One Execute batch sends
``--queries`` runaway queries (a recursive CTE that never ends); while they
run, calculator calls go in their own batches, one after the other, and each
one's round trip is timed. The same calls on the idle service give the
baseline. Before the SQL tools had their own threads, the runaway queries
filled the thread pool every synchronous tool shares and a calculator call
waited for them.

Writes bench/results/sql_isolation.json and prints it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import grpc

from agentloop.kernel.settings import ToolSettings
from agentloop.kernel.wellknown import duration
from agentloop.v1 import common_pb2, tools_pb2, tools_pb2_grpc
from bench.workload import bench_parser, measure_and_publish
from tool_svc.builtins import default_registry
from tool_svc.service import create_server

RESULTS = Path(__file__).parent / "results"
ENDLESS = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n"


async def _calculator_ms(stub: tools_pb2_grpc.ToolServiceStub, calls: int) -> list[float]:
    """Round trips of `calls` calculator calls, one after the other, in milliseconds."""
    times = []
    for i in range(calls):
        request = tools_pb2.ExecuteRequest(
            calls=[common_pb2.ToolCall(id=f"c{i}", name="calculator", arguments_json='{"expression": "6*7"}')]
        )
        start = time.perf_counter()
        async for _ in stub.Execute(request, timeout=60):
            pass
        times.append((time.perf_counter() - start) * 1000)
    return times


async def measure(args: Any) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="agentloop-bench-") as tmp:
        settings = dataclasses.replace(ToolSettings(), port=0, sql_database=f"{tmp}/shop.db")
        handle = await create_server(settings, default_registry(settings))
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{handle.port}") as channel:
                stub = tools_pb2_grpc.ToolServiceStub(channel)
                idle = await _calculator_ms(stub, args.calls)
                storm = tools_pb2.ExecuteRequest(
                    calls=[
                        common_pb2.ToolCall(
                            id=f"q{i}", name="sql_query", arguments_json=json.dumps({"query": ENDLESS})
                        )
                        for i in range(args.queries)
                    ],
                    timeout=duration(args.timeout_s),
                    max_concurrency=args.queries,
                )
                started = asyncio.Event()
                outcomes: list[str] = []

                async def runaway() -> None:
                    async for response in stub.Execute(storm, timeout=120):
                        if response.WhichOneof("event") == "started":
                            started.set()
                        else:
                            kind = common_pb2.ToolErrorKind.Name(response.finished.error_kind)
                            outcomes.append(kind.removeprefix("TOOL_ERROR_KIND_").lower())

                storm_start = time.perf_counter()
                queries = asyncio.create_task(runaway())
                await started.wait()
                busy = await _calculator_ms(stub, args.calls)
                await queries
                storm_s = time.perf_counter() - storm_start
        finally:
            await handle.aclose(0)
    return {
        "runaway_queries": args.queries,
        "query_time_limit_s": 2.0,
        "call_timeout_s": args.timeout_s,
        "calculator_ms_idle": {"median": round(statistics.median(idle), 2), "max": round(max(idle), 2)},
        "calculator_ms_during_runaway_queries": {
            "median": round(statistics.median(busy), 2),
            "max": round(max(busy), 2),
            "calls": [round(t, 1) for t in busy],
        },
        "runaway_outcomes": {kind: outcomes.count(kind) for kind in sorted(set(outcomes))},
        "runaway_batch_s": round(storm_s, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--queries", type=int, default=16, help="runaway SQL queries in the storm")
    parser.add_argument("--calls", type=int, default=5, help="calculator calls timed, idle and during")
    parser.add_argument("--timeout-s", type=float, default=30.0, help="the runaway batch's call timeout")
    return measure_and_publish(parser, measure, RESULTS / "sql_isolation.json", argv)


if __name__ == "__main__":
    raise SystemExit(main())
