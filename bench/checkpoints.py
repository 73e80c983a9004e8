"""What a durable run costs in storage and write latency (issue: durable runs).

1. Bytes written per run of 5, 20 and 50 steps (× 3 parallel tools), through
   the three services as processes on Postgres: state bytes per step must stay
   flat as runs grow, unlike checkpointers that rewrite the whole state.
2. Checkpoint write latency p50/p99 on Postgres, one writer and 50 concurrent
   writers, with the payload of a real step (an assistant message with three
   tool calls, or three tool results, plus its events).

Writes bench/results/checkpoints.json.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import grpc

from agentloop.cli.demo import services
from agentloop.internal.v1 import checkpoint_pb2
from agentloop.scripted_model import Scenario, Script
from agentloop.v1 import agent_pb2, agent_pb2_grpc, common_pb2
from bench.pg import bench_database
from bench.workload import bench_parser, bench_script, measure_and_publish, percentile, write_script
from gateway.store.base import CheckpointWrite
from gateway.store.factory import open_store

RESULTS = Path(__file__).parent / "results"
STEP_COUNTS = (5, 20, 50)
# Published by LangGraph users for its Postgres checkpointer on the same workload (DESIGN.md).
LANGGRAPH_BYTES = {5: 76_000, 20: 837_000, 50: 4_800_000}


def _script() -> Script:
    scenarios = []
    for steps in STEP_COUNTS:
        (scenario,) = bench_script(steps, 3).scenarios
        scenarios.append(Scenario(match=f"^steps={steps}$", turns=scenario.turns))
    return Script(scenarios=tuple(scenarios))


async def bytes_per_run(url: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        script = write_script(_script(), Path(tmp) / "bytes.json")
        env = dict(os.environ, DATABASE_URL=url, AGENTLOOP_LOG_LEVEL="WARNING")
        env.pop("OPENAI_BASE_URL", None)
        with services(env, model_args=["--script", str(script), "--no-record"]) as ports:
            run_ids: dict[int, str] = {}
            async with grpc.aio.insecure_channel(f"127.0.0.1:{ports['gateway']}") as channel:
                stub = agent_pb2_grpc.AgentStub(channel)
                for steps in STEP_COUNTS:
                    options = agent_pb2.RunOptions(max_steps=steps + 1)
                    request = agent_pb2.InvokeRequest(input=f"steps={steps}", options=options)
                    reply = await stub.Invoke(request, timeout=300)
                    assert reply.final.metadata.steps_taken == steps, reply.final.metadata
                    run_ids[steps] = reply.run_id
    store = await open_store(url, migrate=False)
    try:
        out: dict[str, Any] = {}
        for steps, run_id in run_ids.items():
            stats = await store.storage(run_id)
            deltas = stats.by_checkpoint
            out[str(steps)] = {
                "state_bytes": stats.state_bytes,
                "state_bytes_per_step": round(stats.state_bytes / steps),
                "event_bytes": stats.event_bytes,
                "tool_result_bytes": stats.tool_result_bytes,
                "checkpoints": len(deltas),
                "first_step_delta_bytes": sum(deltas[1:3]),
                "last_step_delta_bytes": sum(deltas[-4:-2]),
                "langgraph_bytes": LANGGRAPH_BYTES[steps],
                "ratio_to_langgraph": round(stats.state_bytes / LANGGRAPH_BYTES[steps], 4),
            }
        return out
    finally:
        await store.close()


def _step_payload(run_id: str, i: int) -> tuple[list[common_pb2.Message], list[agent_pb2.RunEvent]]:
    calls = [
        common_pb2.ToolCall(id=f"call_{i}_{j}", name="calculator", arguments_json='{"expression": "1 + 1"}')
        for j in range(3)
    ]
    if i % 2 == 0:
        messages = [common_pb2.Message(role=common_pb2.ROLE_ASSISTANT, tool_calls=calls)]
    else:
        messages = [
            common_pb2.Message(role=common_pb2.ROLE_TOOL, content="2", tool_call_id=c.id, name=c.name)
            for c in calls
        ]
    events = [agent_pb2.RunEvent(run_id=run_id, sequence=i * 6 + k + 1) for k in range(6)]
    return messages, events


async def write_latency(url: str, writers: int, checkpoints_each: int) -> dict[str, float]:
    store = await open_store(url, migrate=False, pool_size=max(5, writers))
    owner = "bench"
    latencies: list[float] = []

    async def one_run() -> None:
        thread_id, run_id = uuid.uuid4().hex, uuid.uuid4().hex
        await store.create_thread(thread_id, "bench")
        await store.create_run(run_id, thread_id, "bench", b"")
        await store.start_run(run_id, owner, 60)
        for i in range(checkpoints_each):
            messages, events = _step_payload(run_id, i)
            record = checkpoint_pb2.CheckpointRecord(node="tools", next_node="agent", current_step=i)
            started = time.perf_counter()
            await store.write_checkpoint(CheckpointWrite(run_id, owner, record, messages, events))
            latencies.append((time.perf_counter() - started) * 1000)

    try:
        started = time.perf_counter()
        await asyncio.gather(*(one_run() for _ in range(writers)))
        wall = time.perf_counter() - started
    finally:
        await store.close()
    return {
        "writes": len(latencies),
        "p50_ms": round(percentile(latencies, 50), 3),
        "p99_ms": round(percentile(latencies, 99), 3),
        "mean_ms": round(statistics.fmean(latencies), 3),
        "writes_per_s": round(len(latencies) / wall, 1),
    }


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    async with bench_database() as url:
        from gateway.store import migrate

        await migrate.upgrade_async(url)
        return {
            "bytes_per_run_postgres": await bytes_per_run(url),
            "write_latency_postgres_c1": await write_latency(url, 1, args.writes),
            "write_latency_postgres_c50": await write_latency(url, 50, max(1, args.writes // 10)),
        }


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--writes", type=int, default=500, help="checkpoints written by the single writer")
    return measure_and_publish(parser, measure, RESULTS / "checkpoints.json", argv)


if __name__ == "__main__":
    sys.exit(main())
