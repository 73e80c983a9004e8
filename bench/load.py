"""Load test: many concurrent streaming runs against one gateway for minutes; throughput, latency, memory.

The scripted model (zero latency, requests not recorded), the reasoner, the
tool service and the gateway run as separate processes. `--concurrency`
clients each start Agent.Run (stream mode ALL_STEPS) on a 3-step × 2-tool
workload, read it to the end and start the next one, until `--seconds` have
passed; every run in flight then finishes and the test stops by itself.
Each step calls a different pair of built-in tools, so the gateway's loop
detection (which stops runs that repeat the same tool round) never fires.

Every second the resident memory (RSS) of each service process is sampled.
Memory is "flat" when, for every service, the peak RSS of the last window is
within `--rss-tolerance` (10 %) of the peak of the first window (a window is a
minute, or a third of the run when the run is shorter than three minutes).

Reports runs/s, p50/p99 run latency, errors (anything but a final event with
the expected step count), RSS first/peak/last per process; writes
bench/results/load.json. Exits 1 when there were errors or memory grew.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import platform
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from agentloop.cli.demo import services
from agentloop.scripted_model import Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2, agent_pb2_grpc
from bench.pg import bench_database
from bench.workload import bench_parser, cpu_seconds, open_fds, percentile, rss_mib, write_script

RESULTS = Path(__file__).parent / "results"
SERVICES = ("reasoner", "tools", "gateway")
PROCESSES = ("model", *SERVICES)
ROUNDS: tuple[tuple[ScriptedToolCall, ...], ...] = (
    (
        ScriptedToolCall("calculator", {"expression": "1234 * 5678"}),
        ScriptedToolCall("current_time", {"timezone": "UTC"}),
    ),
    (
        ScriptedToolCall("sql_list_tables", {}),
        ScriptedToolCall("calculator", {"expression": "sqrt(2) * 7"}),
    ),
    (
        ScriptedToolCall("sql_describe_table", {"table": "customers"}),
        ScriptedToolCall("current_time", {"timezone": "Europe/Paris"}),
    ),
)
STEPS = len(ROUNDS)
FANOUT = len(ROUNDS[0])
RUN_TIMEOUT_S = 120.0
WARMUP_RUNS = 20


def load_script() -> Script:
    """3 steps of 2 parallel tool calls, a different pair each step, then a streamed answer."""
    turns = (*(Turn(tool_calls=calls) for calls in ROUNDS), Turn(content="Done: {{last_tool}}."))
    return Script(scenarios=(Scenario(match="", turns=turns),))


@dataclass
class Tally:
    """What the clients saw."""

    latencies_s: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    events: int = 0
    tokens: int = 0


@dataclass
class Samples:
    """RSS (MiB) and open file descriptors of each process, one row per second, with the time since
    the measured phase began."""

    times_s: list[float] = field(default_factory=list)
    rss_mib: dict[str, list[float]] = field(default_factory=dict)
    fds: dict[str, list[int]] = field(default_factory=dict)


async def one_run(
    stub: agent_pb2_grpc.AgentStub,
    tally: Tally,
    *,
    stream_mode: agent_pb2.StreamMode.ValueType = agent_pb2.STREAM_MODE_ALL_STEPS,
    steps: int = STEPS,
    tool_calls: int = STEPS * FANOUT,
) -> None:
    """One streamed run; its latency if it ended with `steps` and `tool_calls`, else an error by kind."""
    request = agent_pb2.RunRequest(input="load", options=agent_pb2.RunOptions(stream_mode=stream_mode))
    started = time.perf_counter()
    final: agent_pb2.RunFinal | None = None
    try:
        async for response in stub.Run(request, timeout=RUN_TIMEOUT_S):
            tally.events += 1
            kind = response.event.WhichOneof("event")
            if kind == "llm_token":
                tally.tokens += 1
            elif kind == "final":
                final = response.event.final
            elif kind == "error":
                tally.errors[f"error event {response.event.error.code}"] += 1
                return
    except grpc.aio.AioRpcError as exc:
        tally.errors[f"rpc {exc.code().name}"] += 1
        return
    if final is None:
        tally.errors["stream ended without a final event"] += 1
    elif final.metadata.steps_taken != steps or final.metadata.tool_calls != tool_calls:
        tally.errors[
            f"wrong shape: {final.metadata.steps_taken} steps, {final.metadata.tool_calls} calls"
        ] += 1
    else:
        tally.latencies_s.append(time.perf_counter() - started)


async def sample_rss(pids: Mapping[str, int], samples: Samples, stop: asyncio.Event) -> None:
    """Every second until `stop`: the RSS and open descriptors of each process."""
    began = time.monotonic()
    samples.rss_mib = {name: [] for name in pids}
    samples.fds = {name: [] for name in pids}
    while not stop.is_set():
        samples.times_s.append(time.monotonic() - began)
        for name, pid in pids.items():
            samples.rss_mib[name].append(rss_mib(pid))
            samples.fds[name].append(open_fds(pid))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=1.0)


async def drive(addr: str, pids: Mapping[str, int], seconds: float, concurrency: int) -> dict[str, Any]:
    """Warm up, then `concurrency` closed-loop clients for `seconds`; figures as a dict."""
    async with grpc.aio.insecure_channel(addr) as channel:
        stub = agent_pb2_grpc.AgentStub(channel)
        warmup = Tally()
        await asyncio.gather(*(one_run(stub, warmup) for _ in range(WARMUP_RUNS)))
        if warmup.errors:
            raise RuntimeError(f"warm-up runs failed: {dict(warmup.errors)}")

        tally, samples, stop = Tally(), Samples(), asyncio.Event()
        sampler = asyncio.create_task(sample_rss(pids, samples, stop))
        cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
        started = time.monotonic()
        end = started + seconds

        async def client() -> None:
            while time.monotonic() < end:
                await one_run(stub, tally)

        await asyncio.gather(*(client() for _ in range(concurrency)))
        elapsed = time.monotonic() - started
        cpu = {name: cpu_seconds(pid) - cpu_before[name] for name, pid in pids.items()}
        stop.set()
        await sampler

    completed = len(tally.latencies_s)
    errors = sum(tally.errors.values())
    return {
        "elapsed_s": round(elapsed, 2),
        "runs_completed": completed,
        "runs_per_s": round(completed / elapsed, 2),
        "steps_per_s": round(completed * STEPS / elapsed, 1),
        "events_per_s": round(tally.events / elapsed, 1),
        "p50_run_ms": round(percentile(tally.latencies_s, 50) * 1000, 1) if completed else None,
        "p99_run_ms": round(percentile(tally.latencies_s, 99) * 1000, 1) if completed else None,
        "max_run_ms": round(max(tally.latencies_s) * 1000, 1) if completed else None,
        "errors": errors,
        "errors_by_kind": dict(tally.errors),
        "cpu_percent": {name: round(100 * value / elapsed, 1) for name, value in cpu.items()},
        "memory": memory_report(samples, seconds),
    }


def memory_report(samples: Samples, seconds: float, tolerance: float = 0.10) -> dict[str, Any]:
    """First/peak/last RSS per process and whether the services' memory stayed flat."""
    window = min(60.0, seconds / 3)
    first = [i for i, t in enumerate(samples.times_s) if t < window]
    last = [i for i, t in enumerate(samples.times_s) if t >= samples.times_s[-1] - window]
    per_process: dict[str, Any] = {}
    flat = True
    for name, values in samples.rss_mib.items():
        first_peak = max(values[i] for i in first)
        last_peak = max(values[i] for i in last)
        growth = (last_peak - first_peak) / first_peak if first_peak else 0.0
        per_process[name] = {
            "first_mib": round(values[0], 1),
            "peak_mib": round(max(values), 1),
            "last_mib": round(values[-1], 1),
            "first_window_peak_mib": round(first_peak, 1),
            "last_window_peak_mib": round(last_peak, 1),
            "growth_percent": round(100 * growth, 1),
        }
        if name in SERVICES and growth > tolerance:
            flat = False
    return {
        "samples": len(samples.times_s),
        "window_s": round(window, 1),
        "tolerance_percent": round(100 * tolerance, 1),
        "flat": flat,
        "per_process": per_process,
        "series_mib": {name: [round(v, 1) for v in values] for name, values in samples.rss_mib.items()},
    }


@contextlib.contextmanager
def running_services(
    script: Script, database_url: str, extra_env: Mapping[str, str] | None = None
) -> Iterator[tuple[str, dict[str, int]]]:
    """The model playing `script`, reasoner, tools and gateway (on `database_url`) as processes:
    the gateway's address and each process's pid."""
    with tempfile.TemporaryDirectory() as tmp:
        path = write_script(script, Path(tmp) / "script.json")
        env = dict(os.environ)
        env.pop("OPENAI_BASE_URL", None)
        env["AGENTLOOP_LOG_LEVEL"] = "WARNING"
        env["DATABASE_URL"] = database_url
        env.update(extra_env or {})
        with services(env, model_args=["--script", str(path), "--no-record"]) as ports:
            yield f"127.0.0.1:{ports['gateway']}", {name: ports[f"{name}_pid"] for name in PROCESSES}


def measure(seconds: float, concurrency: int, database_url: str) -> dict[str, Any]:
    """Start the services (the gateway on `database_url`), drive the load, stop them; the figures."""
    with running_services(load_script(), database_url) as (addr, pids):
        return asyncio.run(drive(addr, pids, seconds, concurrency))


async def _with_postgres(seconds: float, concurrency: int) -> dict[str, Any]:
    async with bench_database() as url:
        return await asyncio.to_thread(measure, seconds, concurrency, url)


def summary(report: Mapping[str, Any]) -> str:
    r = report["results"]
    lines = [
        f"{r['runs_completed']} runs in {r['elapsed_s']} s at concurrency {report['concurrency']}: "
        f"{r['runs_per_s']} runs/s, p50 {r['p50_run_ms']} ms, p99 {r['p99_run_ms']} ms, "
        f"errors {r['errors']} {r['errors_by_kind'] or ''}".rstrip(),
        f"memory ({'flat' if r['memory']['flat'] else 'GREW'}; windows of {r['memory']['window_s']} s):",
    ]
    for name, m in r["memory"]["per_process"].items():
        lines.append(
            f"  {name:9} first {m['first_mib']:7.1f}  peak {m['peak_mib']:7.1f}  "
            f"last {m['last_mib']:7.1f} MiB  (last window peak vs first: {m['growth_percent']:+.1f} %)  "
            f"cpu {r['cpu_percent'][name]} %"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--seconds", type=float, default=180.0, help="how long to keep the load on")
    parser.add_argument("--concurrency", type=int, default=50, help="runs in flight at once")
    parser.add_argument(
        "--backend", choices=["sqlite", "postgres"], default="sqlite", help="checkpoint store"
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "load.json")
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.concurrency < 1:
        parser.error("--seconds must be > 0 and --concurrency >= 1")

    if args.backend == "sqlite":
        with tempfile.TemporaryDirectory() as tmp:
            results = measure(args.seconds, args.concurrency, f"sqlite+aiosqlite:///{tmp}/load.db")
    else:
        results = asyncio.run(_with_postgres(args.seconds, args.concurrency))
    report = {
        "workload": {
            "steps": STEPS,
            "parallel_tools": FANOUT,
            "stream_mode": "ALL_STEPS",
            "model_latency_ms": 0,
        },
        "seconds": args.seconds,
        "concurrency": args.concurrency,
        "backend": args.backend,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(summary(report))
    print(f"written to {args.out}")
    return 0 if results["errors"] == 0 and results["memory"]["flat"] else 1


if __name__ == "__main__":
    sys.exit(main())
