"""Gateway CPU spent in the store's write hot path, per call, on SQLite and Postgres.

A run writes one checkpoint per node transition and records its tool results
as they finish, so these two calls bound what a step costs the gateway
(target: ~2 ms of gateway CPU per step in all). This measures process CPU
(`time.process_time`: the event loop plus driver threads such as aiosqlite's,
not the database server) per call of:

- `write_checkpoint` with the payload of a real step (`bench.checkpoints._step_payload`:
  one assistant message with three tool calls, or three tool messages, plus six events);
- `record_tool_results` with the three results of one step;
- `record_tool_result` with one result (what a caller that records each call as it
  finishes pays).

One writer, sequential calls, after a warm-up (statement caches filled). Also
reports wall-clock p50/p99 latency. Writes bench/results/store_hotpath.json.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agentloop.internal.v1 import checkpoint_pb2
from agentloop.v1 import common_pb2
from bench.checkpoints import _step_payload
from bench.pg import bench_database
from bench.workload import bench_parser, measure_and_publish, percentile
from gateway.store import migrate
from gateway.store.base import CheckpointWrite
from gateway.store.sql import SqlStore

RESULTS = Path(__file__).parent / "results"
OWNER = "bench"
TOOLS_PER_STEP = 3


async def _timed(calls: int, warmup: int, call: Callable[[int], Awaitable[object]]) -> dict[str, float]:
    """CPU ms per call (mean over `calls`), and wall latency percentiles."""
    for i in range(warmup):
        await call(i)
    latencies: list[float] = []
    cpu0 = time.process_time()
    for i in range(warmup, warmup + calls):
        started = time.perf_counter()
        await call(i)
        latencies.append((time.perf_counter() - started) * 1000)
    cpu = time.process_time() - cpu0
    return {
        "calls": calls,
        "cpu_ms_per_call": round(cpu / calls * 1000, 3),
        "p50_ms": round(percentile(latencies, 50), 3),
        "p99_ms": round(percentile(latencies, 99), 3),
        "mean_ms": round(statistics.fmean(latencies), 3),
    }


async def _new_run(store: SqlStore) -> str:
    thread_id, run_id = uuid.uuid4().hex, uuid.uuid4().hex
    await store.create_thread(thread_id, "bench")
    await store.create_run(run_id, thread_id, "bench", b"")
    await store.start_run(run_id, OWNER, 60)
    return run_id


async def measure_backend(url: str, calls: int, warmup: int) -> dict[str, Any]:
    await migrate.upgrade_async(url)
    store = SqlStore(url, lease_s=60)
    try:
        run_id = await _new_run(store)
        record = checkpoint_pb2.CheckpointRecord(node="tools", next_node="agent")

        async def checkpoint(i: int) -> object:
            messages, events = _step_payload(run_id, i)
            return await store.write_checkpoint(CheckpointWrite(run_id, OWNER, record, messages, events))

        def results(i: int) -> list[common_pb2.ToolResult]:
            return [
                common_pb2.ToolResult(tool_call_id=f"call_{i}_{j}", name="calculator", content="2")
                for j in range(TOOLS_PER_STEP)
            ]

        async def batch(i: int) -> None:
            await store.record_tool_results(run_id, OWNER, results(i))

        async def single(i: int) -> None:
            await store.record_tool_result(run_id, OWNER, results(i)[0])

        out = {
            "write_checkpoint": await _timed(calls, warmup, checkpoint),
            f"record_tool_results_x{TOOLS_PER_STEP}": await _timed(calls, warmup, batch),
        }
        # Fresh call ids: the batch above already recorded call_{i}_0.
        run_id = await _new_run(store)
        out["record_tool_result"] = await _timed(calls, warmup, single)
        return out
    finally:
        await store.close()


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        results["sqlite"] = await measure_backend(
            f"sqlite+aiosqlite:///{Path(tmp) / 'hotpath.db'}", args.calls, args.warmup
        )
    if not args.no_postgres:
        async with bench_database() as url:
            results["postgres"] = await measure_backend(url, args.calls, args.warmup)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--calls", type=int, default=1000, help="measured calls per operation")
    parser.add_argument("--warmup", type=int, default=100, help="unmeasured calls first (fills caches)")
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    return measure_and_publish(parser, measure, RESULTS / "store_hotpath.json", argv)


if __name__ == "__main__":
    sys.exit(main())
