"""Gateway overhead per step and runs/s, through all three services as separate processes.

Workload: the scripted model (zero latency) asks for F parallel calculator
calls for K steps, then answers; every hop is real (gRPC between services,
HTTP+JSON to the model). Measures, in one session so the figures compare:

- concurrency 1: median wall time per run and per step, and CPU per step
  summed over reasoner + tools + gateway (the scripted model excluded);
- concurrency 50: runs/s and p50/p99 run latency.

Writes bench/results/overhead.json and prints a summary.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import grpc

from agentloop.cli.demo import services
from agentloop.v1 import agent_pb2, agent_pb2_grpc
from bench.pg import bench_database
from bench.workload import bench_parser, bench_script, cpu_seconds, percentile, publish, rss_mib, write_script

RESULTS = Path(__file__).parent / "results"
SERVICES = ("reasoner", "tools", "gateway")


async def _one_run(stub: agent_pb2_grpc.AgentStub, mode: str, steps: int) -> float:
    started = time.perf_counter()
    if mode == "invoke":
        reply = await stub.Invoke(agent_pb2.InvokeRequest(input="bench"), timeout=120)
        md = reply.final.metadata
    else:
        request = agent_pb2.RunRequest(
            input="bench", options=agent_pb2.RunOptions(stream_mode=agent_pb2.STREAM_MODE_ALL_STEPS)
        )
        md = None
        async for response in stub.Run(request, timeout=120):
            event = response.event
            if event.WhichOneof("event") == "final":
                md = event.final.metadata
            elif event.WhichOneof("event") == "error":
                raise RuntimeError(event.error.message)
        assert md is not None
    elapsed = time.perf_counter() - started
    if md.steps_taken != steps:
        raise RuntimeError(f"expected {steps} steps, got {md.steps_taken} ({md.stop_reason})")
    return elapsed


async def _sequential(addr: str, mode: str, runs: int, steps: int) -> list[float]:
    async with grpc.aio.insecure_channel(addr) as channel:
        stub = agent_pb2_grpc.AgentStub(channel)
        return [await _one_run(stub, mode, steps) for _ in range(runs)]


async def _concurrent(
    addr: str, mode: str, runs: int, concurrency: int, steps: int
) -> tuple[list[float], float]:
    async with grpc.aio.insecure_channel(addr) as channel:
        stub = agent_pb2_grpc.AgentStub(channel)
        gate = asyncio.Semaphore(concurrency)

        async def bounded() -> float:
            async with gate:
                return await _one_run(stub, mode, steps)

        started = time.perf_counter()
        latencies = await asyncio.gather(*(bounded() for _ in range(runs)))
        return list(latencies), time.perf_counter() - started


def measure(
    steps: int, fanout: int, runs_c1: int, runs_c50: int, concurrency: int, database_url: str
) -> dict[str, Any]:
    """Start the services once (the gateway on `database_url`), run every measurement, return the figures."""
    with tempfile.TemporaryDirectory() as tmp:
        script = write_script(bench_script(steps, fanout), Path(tmp) / "bench.json")
        env = dict(os.environ)
        env.pop("OPENAI_BASE_URL", None)
        env["AGENTLOOP_LOG_LEVEL"] = "WARNING"
        env["DATABASE_URL"] = database_url
        with services(env, model_args=["--script", str(script), "--no-record"]) as ports:
            addr = f"127.0.0.1:{ports['gateway']}"
            pids = {name: ports[f"{name}_pid"] for name in SERVICES}
            asyncio.run(_sequential(addr, "invoke", 5, steps))  # warm-up: connections, caches
            results: dict[str, Any] = {}
            for mode in ("invoke", "run"):
                cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
                lat = asyncio.run(_sequential(addr, mode, runs_c1, steps))
                cpu_by = {name: cpu_seconds(pid) - cpu_before[name] for name, pid in pids.items()}
                cpu = sum(cpu_by.values())
                med = statistics.median(lat)
                results[f"c1_{mode}"] = {
                    "runs": runs_c1,
                    "median_run_ms": med * 1000,
                    "median_ms_per_step": med * 1000 / steps,
                    "cpu_ms_per_step_3_services": cpu * 1000 / (runs_c1 * steps),
                    "cpu_ms_per_step_by_service": {
                        name: round(value * 1000 / (runs_c1 * steps), 3) for name, value in cpu_by.items()
                    },
                    "runs_per_s": runs_c1 / sum(lat),
                }
            lat, wall = asyncio.run(_concurrent(addr, "invoke", runs_c50, concurrency, steps))
            results[f"c{concurrency}_invoke"] = {
                "runs": runs_c50,
                "runs_per_s": runs_c50 / wall,
                "p50_run_ms": percentile(lat, 50) * 1000,
                "p99_run_ms": percentile(lat, 99) * 1000,
            }
            results["rss_mib"] = {name: round(rss_mib(pid), 1) for name, pid in pids.items()}
    return results


async def _with_postgres(args: argparse.Namespace) -> dict[str, Any]:
    async with bench_database() as url:
        return await asyncio.to_thread(
            measure, args.steps, args.fanout, args.runs, args.concurrent_runs, args.concurrency, url
        )


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--fanout", type=int, default=3)
    parser.add_argument("--runs", type=int, default=40, help="sequential runs at concurrency 1")
    parser.add_argument("--concurrent-runs", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--out", type=Path, default=RESULTS / "overhead.json")
    parser.add_argument(
        "--backends", default="sqlite,postgres", help="checkpoint stores to measure with (comma-separated)"
    )
    args = parser.parse_args(argv)
    figures: dict[str, Any] = {}
    for backend in args.backends.split(","):
        if backend == "sqlite":
            with tempfile.TemporaryDirectory() as tmp:
                url = f"sqlite+aiosqlite:///{tmp}/bench.db"
                figures[backend] = measure(
                    args.steps, args.fanout, args.runs, args.concurrent_runs, args.concurrency, url
                )
        else:
            figures[backend] = asyncio.run(_with_postgres(args))
    workload = {"steps": args.steps, "parallel_tools": args.fanout, "model_latency_ms": 0}
    publish(figures, args.out, workload=workload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
