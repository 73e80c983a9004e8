"""First token at the client against the model's first token, through all three services as processes.

The scripted model runs in this process (its own thread and event loop) with
a per-token latency, so the moment it writes a stream's first token
(`ScriptedModelServer.first_token_at`) and the moment the client receives the
first `llm_token` of the answer are read from one clock. The difference is
what the Reasoner, the gateway and two gRPC hops add before a user sees the
answer start. Runs are sequential (concurrency 1) in the default stream mode
(FINAL_ONLY), for an answer with no tool step and one after a tool step.

Also counts the model calls per run of the K-step workload (bench.workload)
in each stream mode, from the requests the model server answered.

Writes bench/results/first_token.json and prints it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc

from agentloop.cli.demo import services
from agentloop.scripted_model import Latency, Scenario, Script, ScriptedModelServer, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2, agent_pb2_grpc
from bench.pg import bench_database
from bench.workload import bench_parser, bench_script, percentile, publish

RESULTS = Path(__file__).parent / "results"
TARGET_P99_MS = 5.0
"""Client first token at most this much after the model's, at the 99th percentile."""
_MODES = {
    "final_only": agent_pb2.STREAM_MODE_FINAL_ONLY,
    "all_steps": agent_pb2.STREAM_MODE_ALL_STEPS,
    "none": agent_pb2.STREAM_MODE_NONE,
}


def latency_script(answer_tokens: int, latency: Latency) -> Script:
    """Two questions: one answered at once, one answered after a tool step."""
    answer = Turn(content=" ".join(f"w{i}" for i in range(answer_tokens)))
    tool = Turn(tool_calls=(ScriptedToolCall("calculator", {"expression": "6 * 7"}),))
    return Script(
        scenarios=(
            Scenario(match="after a tool", turns=(tool, answer)),
            Scenario(match="", turns=(answer,)),
        ),
        latency=latency,
    )


@contextmanager
def model_in_thread() -> Iterator[tuple[ScriptedModelServer, asyncio.AbstractEventLoop]]:
    """The scripted model on its own event loop in a thread of this process (one clock with the client)."""
    model = ScriptedModelServer(record_requests=False)
    loop = asyncio.new_event_loop()
    started = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(model.start())
        started.set()
        loop.run_forever()

    thread = threading.Thread(target=serve, name="scripted-model", daemon=True)
    thread.start()
    started.wait(30)
    try:
        yield model, loop
    finally:
        asyncio.run_coroutine_threadsafe(model.stop(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)


def set_script(model: ScriptedModelServer, loop: asyncio.AbstractEventLoop, script: Script) -> None:
    """Swap the model's script on its own loop (never mid-request: callers are between runs)."""
    done = threading.Event()

    def swap() -> None:
        model.set_script(script)
        done.set()

    loop.call_soon_threadsafe(swap)
    done.wait(30)


async def _first_token_run(
    stub: agent_pb2_grpc.AgentStub, model: ScriptedModelServer, question: str
) -> dict[str, float]:
    """One FINAL_ONLY run: when the model wrote the answer's first token, when the client got it."""
    before = len(model.first_token_at)
    started = time.perf_counter()
    client_first = 0.0
    calls = 0
    async for response in stub.Run(agent_pb2.RunRequest(input=question), timeout=120):
        event = response.event
        kind = event.WhichOneof("event")
        if kind == "llm_token" and event.llm_token.token and not client_first:
            client_first = time.perf_counter()
        elif kind == "final":
            calls = event.final.metadata.llm_calls
        elif kind == "error":
            raise RuntimeError(event.error.message)
    model_first = model.first_token_at[-1]  # the answer is the run's last call
    if len(model.first_token_at) - before != calls or not client_first:
        raise RuntimeError(f"expected {calls} streamed calls and a streamed answer")
    return {
        "delta_ms": (client_first - model_first) * 1000,
        "client_first_token_ms": (client_first - started) * 1000,
        "model_first_token_ms": (model_first - started) * 1000,
    }


def _summary(samples: list[dict[str, float]]) -> dict[str, Any]:
    deltas = [s["delta_ms"] for s in samples]
    return {
        "runs": len(samples),
        "delta_ms": {
            "p50": round(percentile(deltas, 50), 3),
            "p99": round(percentile(deltas, 99), 3),
            "max": round(max(deltas), 3),
            "min": round(min(deltas), 3),
        },
        "client_first_token_ms_p50": round(statistics.median(s["client_first_token_ms"] for s in samples), 1),
        "model_first_token_ms_p50": round(statistics.median(s["model_first_token_ms"] for s in samples), 1),
    }


async def _first_tokens(addr: str, model: ScriptedModelServer, runs: int) -> dict[str, Any]:
    async with grpc.aio.insecure_channel(addr) as channel:
        stub = agent_pb2_grpc.AgentStub(channel)
        await _first_token_run(stub, model, "warm up")
        out: dict[str, Any] = {}
        for name, question in (("answer", "answer now"), ("after_one_tool_step", "answer after a tool")):
            out[name] = _summary([await _first_token_run(stub, model, question) for _ in range(runs)])
        return out


async def _calls_per_run(
    addr: str, model: ScriptedModelServer, steps: int, runs: int
) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    async with grpc.aio.insecure_channel(addr) as channel:
        stub = agent_pb2_grpc.AgentStub(channel)
        for name, mode in _MODES.items():
            before = len(model.prompt_sizes)
            reported = 0
            for _ in range(runs):
                request = agent_pb2.RunRequest(input="bench", options=agent_pb2.RunOptions(stream_mode=mode))
                async for response in stub.Run(request, timeout=120):
                    if response.event.WhichOneof("event") == "final":
                        md = response.event.final.metadata
                        if md.steps_taken != steps:
                            raise RuntimeError(f"expected {steps} steps, got {md.steps_taken}")
                        reported += md.llm_calls
            out[name] = {
                "model_requests_per_run": (len(model.prompt_sizes) - before) / runs,
                "llm_calls_per_run": reported / runs,
            }
    return out


def measure(args: argparse.Namespace, database_url: str) -> dict[str, Any]:
    """Start the services once against the in-process model; measure first tokens, then calls per run.

    The machine's load average is recorded next to the figures: on a shared
    2-core machine the tail follows what else runs (each hop wakes a process).
    """
    latency = Latency(first_token_ms=args.first_token_ms, per_token_ms=args.per_token_ms)
    with model_in_thread() as (model, loop):
        set_script(model, loop, latency_script(args.answer_tokens, latency))
        env = dict(os.environ)
        env["OPENAI_BASE_URL"] = model.base_url
        env["AGENTLOOP_LOG_LEVEL"] = "WARNING"
        env["DATABASE_URL"] = database_url
        with services(env) as ports:
            addr = f"127.0.0.1:{ports['gateway']}"
            load = [os.getloadavg()[0]]
            first = asyncio.run(_first_tokens(addr, model, args.runs))
            load.append(os.getloadavg()[0])
            set_script(model, loop, bench_script(args.steps, args.fanout))
            calls = asyncio.run(_calls_per_run(addr, model, args.steps, args.call_runs))
    worst = max(first[name]["delta_ms"]["p99"] for name in first)
    return {
        "first_token": first,
        "load_average_1m_before_after": [round(x, 2) for x in load],
        "target_delta_p99_ms": TARGET_P99_MS,
        "target_met": worst <= TARGET_P99_MS,
        "model_calls_per_run": {"workload": f"{args.steps} steps x {args.fanout} tools", **calls},
    }


async def _with_postgres(args: argparse.Namespace) -> dict[str, Any]:
    async with bench_database() as url:
        return await asyncio.to_thread(measure, args, url)


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--runs", type=int, default=50, help="sequential runs per first-token scenario")
    parser.add_argument("--first-token-ms", type=float, default=500)
    parser.add_argument("--per-token-ms", type=float, default=50)
    parser.add_argument("--answer-tokens", type=int, default=8)
    parser.add_argument("--steps", type=int, default=10, help="tool steps of the calls-per-run workload")
    parser.add_argument("--fanout", type=int, default=3)
    parser.add_argument("--call-runs", type=int, default=5, help="runs per stream mode for calls per run")
    parser.add_argument("--backend", choices=("postgres", "sqlite"), default="postgres")
    parser.add_argument("--out", type=Path, default=RESULTS / "first_token.json")
    args = parser.parse_args(argv)
    if args.backend == "sqlite":
        with tempfile.TemporaryDirectory() as tmp:
            figures = measure(args, f"sqlite+aiosqlite:///{tmp}/bench.db")
    else:
        figures = asyncio.run(_with_postgres(args))
    workload = {
        "stream_mode": "FINAL_ONLY",
        "concurrency": 1,
        "model_first_token_ms": args.first_token_ms,
        "model_per_token_ms": args.per_token_ms,
        "answer_tokens": args.answer_tokens,
        "backend": args.backend,
    }
    publish(figures, args.out, workload=workload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
