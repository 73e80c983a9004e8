"""Runs in flight: N concurrent runs against a slow, streaming model; added latency and memory per run.

The question is not throughput but how many runs one gateway can hold open at
once while the model does the waiting: every model call takes `--first-token-ms`
(2 s) to its first token and then streams at `--tokens-per-s` (50/s); a run is
3 steps of one fast built-in tool each (a different tool or argument each step,
so loop detection never fires) and a ~50-token answer. The services run as
processes (bench/load.py's set-up) on SQLite, or on a throwaway Postgres
database with `--postgres`. `--concurrency` closed-loop clients, spread over
`--clients` processes (one per 500 by default) so that the client is not what
saturates, keep that many runs in flight (stream mode FINAL_ONLY, what a chat UI
asks for) for `--minutes`.

Figures (bench/results/inflight.json):
- added latency per step = (run latency − the ideal run latency the script's
  pacing implies) / steps, p50 and p99: what the runtime adds to each step;
- gateway memory per in-flight run = (gateway RSS at steady state − gateway RSS
  idle after a warm-up) / N, in kB;
- RSS and open descriptors of every process over time, "flat" when the last
  window's RSS peak is within 10 % of the first's; CPU % of every process and of
  the clients.

`--ramp 1000,2000,5000` measures each level for `--level-minutes` on fresh
services and stops at the first level that fails (an error, p99 added latency
per step over `--max-added-ms`, more than `--max-kb-per-run`, or memory that
grew; `--keep-going` measures every level), saying why: a process at its CPU's
limit, descriptors near their limit, the gateway's admission cap, the
reasoner's connection pool to the model.

The bench raises its soft descriptor limit to the hard one before starting
anything, and every service and client process inherits it.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import multiprocessing
import os
import resource
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from agentloop.kernel.eventloop import loop_factory
from agentloop.kernel.settings import GatewaySettings
from agentloop.scripted_model import Latency, Scenario, Script, ScriptedToolCall, Turn
from agentloop.scripted_model.wire import Pieces
from agentloop.v1 import agent_pb2, agent_pb2_grpc
from bench.load import Samples, Tally, memory_report, one_run, running_services, sample_rss
from bench.pg import bench_database
from bench.workload import (
    bench_parser,
    cpu_seconds,
    fd_soft_limit,
    machine_cpu_seconds,
    open_fds,
    percentile,
    publish,
    rss_mib,
)

RESULTS = Path(__file__).parent / "results"
TOOL_STEPS: tuple[ScriptedToolCall, ...] = (
    ScriptedToolCall("calculator", {"expression": "1234 * 5678"}),
    ScriptedToolCall("current_time", {"timezone": "UTC"}),
    ScriptedToolCall("calculator", {"expression": "sqrt(2) * 7"}),
)
STEPS = len(TOOL_STEPS)
STREAM_MODE = agent_pb2.STREAM_MODE_FINAL_ONLY
WARMUP_RUNS = 20
RUNS_PER_CLIENT = 500
"""Runs one client process drives by default: about 40 % of a core at this scenario's pace, so the
load generator stays well clear of saturating before the services do."""
ERROR_BACKOFF_S = 1.0
"""A client whose run failed waits this long before its next, as a user would: no retry storm."""
BUSY_CPU_PERCENT = 85.0
"""A single-threaded process above this share of one core is the one the others wait for."""
NEAR_LIMIT = 0.9
"""Descriptors or connections above this share of their limit count as the limit reached."""
SHARED_MACHINE_PERCENT = 25.0
"""CPU used by processes outside the bench above which the machine was not quiet (% of one core)."""
OPENAI_POOL = 1000
"""The openai client's default connection pool (max_connections): model calls the reasoner can have open."""


@dataclass(frozen=True)
class Level:
    """How slow the model is, how long the answer and how much load; everything a level needs."""

    concurrency: int = 1000
    seconds: float = 600.0
    first_token_ms: float = 2000.0
    tokens_per_s: float = 50.0
    answer_tokens: int = 50
    clients: int = 1
    max_active_runs: int | None = None

    def script(self) -> Script:
        """3 one-tool steps, then an answer of `answer_tokens` words, paced like the model."""
        answer = " ".join(f"word{i}" for i in range(self.answer_tokens))
        turns = (*(Turn(tool_calls=(call,)) for call in TOOL_STEPS), Turn(content=answer))
        latency = Latency(first_token_ms=self.first_token_ms, per_token_ms=1000.0 / self.tokens_per_s)
        return Script(scenarios=(Scenario(match="", turns=turns),), latency=latency)


def ideal_run_s(script: Script) -> float:
    """The run latency the model's pacing alone implies: every turn's stream, end to end."""
    return sum(
        script.latency.seconds_for(Pieces.of(turn).completion_tokens)
        for scenario in script.scenarios
        for turn in scenario.turns
    )


def raise_fd_limit() -> tuple[int, int]:
    """Lift this process's soft descriptor limit to the hard one (children inherit it); the new limits."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def client_process(addr: str, offsets_s: list[float], start_at: float, end_at: float) -> dict[str, Any]:
    """One client process: a closed loop of runs per offset, each starting that long after
    `start_at`, until `end_at` (wall clock).

    Runs in its own process so that, with several, no single Python event loop
    has to drive every stream; reports its own CPU time so it can be told apart
    from the services'.
    """

    async def drive() -> Tally:
        tally = Tally()
        async with grpc.aio.insecure_channel(addr) as channel:
            stub = agent_pb2_grpc.AgentStub(channel)
            await channel.channel_ready()
            await asyncio.sleep(max(0.0, start_at - time.time()))

            async def client(offset_s: float) -> None:
                await asyncio.sleep(offset_s)
                while time.time() < end_at:
                    errors = tally.errors.total()
                    await one_run(stub, tally, stream_mode=STREAM_MODE, steps=STEPS, tool_calls=STEPS)
                    if tally.errors.total() > errors:
                        await asyncio.sleep(ERROR_BACKOFF_S)

            await asyncio.gather(*(client(offset) for offset in offsets_s))
        return tally

    tally = asyncio.run(drive())
    times = os.times()
    return {
        "latencies_s": tally.latencies_s,
        "errors": dict(tally.errors),
        "events": tally.events,
        "cpu_s": times.user + times.system,
        "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


async def warm_up(addr: str) -> None:
    """A few runs end to end, so imports, pools and the store's tables exist before anything is measured."""
    async with grpc.aio.insecure_channel(addr) as channel:
        stub = agent_pb2_grpc.AgentStub(channel)
        tally = Tally()
        await asyncio.gather(
            *(
                one_run(stub, tally, stream_mode=STREAM_MODE, steps=STEPS, tool_calls=STEPS)
                for _ in range(WARMUP_RUNS)
            )
        )
    if tally.errors:
        raise RuntimeError(f"warm-up runs failed: {dict(tally.errors)}")


def staggered(concurrency: int, processes: int, spread_s: float) -> list[list[float]]:
    """Start offsets spread evenly over `spread_s`, dealt round-robin to the client processes.

    Runs started all at once would keep reaching each step together (the model
    paces them alike), so the services would see bursts of N at once and idle
    gaps, which no real crowd of users makes; spread over one run's length,
    the runs in flight are at every phase of a run, as in a steady state.
    """
    offsets = [spread_s * i / concurrency for i in range(concurrency)]
    return [offsets[p :: max(1, processes)] for p in range(min(processes, concurrency))]


@dataclass
class _Load:
    """What one level of load left behind: the clients' reports and what the processes spent."""

    clients: list[dict[str, Any]]
    elapsed_s: float
    cpu_s: dict[str, float]
    machine_busy_s: float
    samples: Samples


async def drive(addr: str, pids: Mapping[str, int], scenario: Level, ideal_s: float) -> dict[str, Any]:
    """Warm up, measure the idle gateway, then keep `concurrency` runs in flight; the level's figures."""
    await warm_up(addr)
    await asyncio.sleep(2.0)
    idle_rss = []
    for _ in range(3):
        idle_rss.append(rss_mib(pids["gateway"]))
        await asyncio.sleep(0.3)
    idle_fds = {name: open_fds(pid) for name, pid in pids.items()}
    load = await _apply_load(addr, pids, scenario, ideal_s)
    latencies = [value for c in load.clients for value in c["latencies_s"]]
    return {
        **_latency_figures(load, latencies, ideal_s),
        "gateway_memory": _gateway_memory(load.samples, statistics.median(idle_rss), scenario, ideal_s),
        **_cpu_figures(load, len(latencies), ideal_s),
        "client_max_rss_mib": [round(c["max_rss_mib"], 1) for c in load.clients],
        "fds": {
            name: {
                "idle": idle_fds[name],
                "peak": max(load.samples.fds[name]),
                "soft_limit": fd_soft_limit(pid),
            }
            for name, pid in pids.items()
        },
        "memory": memory_report(load.samples, scenario.seconds),
    }


async def _apply_load(addr: str, pids: Mapping[str, int], scenario: Level, ideal_s: float) -> _Load:
    """The client processes keep the level's runs in flight; processes sampled meanwhile."""
    samples, stop = Samples(), asyncio.Event()
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=scenario.clients, mp_context=ctx) as pool:
        start_at = time.time() + 3.0 + scenario.clients  # time for the client processes to import grpc
        end_at = start_at + scenario.seconds
        loop = asyncio.get_running_loop()
        futures = [
            loop.run_in_executor(pool, client_process, addr, offsets, start_at, end_at)
            for offsets in staggered(scenario.concurrency, scenario.clients, ideal_s)
        ]
        await asyncio.sleep(max(0.0, start_at - time.time()))
        sampler = asyncio.create_task(sample_rss(pids, samples, stop))
        cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
        machine_before = machine_cpu_seconds()
        started = time.monotonic()
        clients = await asyncio.gather(*futures)
        elapsed = time.monotonic() - started
        cpu = {name: cpu_seconds(pid) - cpu_before[name] for name, pid in pids.items()}
        machine_busy = machine_cpu_seconds() - machine_before
        stop.set()
        await sampler
    return _Load(list(clients), elapsed, cpu, machine_busy, samples)


def _ms(values: list[float], q: float) -> float | None:
    return round(percentile(values, q), 1) if values else None


def _latency_figures(load: _Load, latencies: list[float], ideal_s: float) -> dict[str, Any]:
    """Runs done, errors, run latency and the latency added per step over the model's pacing."""
    errors: Counter[str] = Counter()
    for c in load.clients:
        errors.update(c["errors"])
    run_ms = [1000 * v for v in latencies]
    added_ms = [1000 * (value - ideal_s) / STEPS for value in latencies]
    return {
        "elapsed_s": round(load.elapsed_s, 2),
        "ideal_run_ms": round(1000 * ideal_s, 1),
        "runs_completed": len(latencies),
        "runs_per_s": round(len(latencies) / load.elapsed_s, 2),
        "errors": sum(errors.values()),
        "errors_by_kind": dict(errors),
        "p50_run_ms": _ms(run_ms, 50),
        "p99_run_ms": _ms(run_ms, 99),
        "max_run_ms": round(max(run_ms), 1) if run_ms else None,
        "added_per_step_ms": {"p50": _ms(added_ms, 50), "p99": _ms(added_ms, 99)},
    }


def _gateway_memory(samples: Samples, idle: float, scenario: Level, ideal_s: float) -> dict[str, Any]:
    """Gateway RSS at steady state (every run in flight, after the first runs' start-up) over idle."""
    settle_s = min(2 * ideal_s, scenario.seconds / 3)
    steady = [
        v
        for t, v in zip(samples.times_s, samples.rss_mib["gateway"], strict=True)
        if settle_s <= t <= scenario.seconds
    ] or samples.rss_mib["gateway"]
    steady_rss = statistics.median(steady)
    return {
        "idle_mib": round(idle, 1),
        "steady_mib": round(steady_rss, 1),
        "steady_peak_mib": round(max(steady), 1),
        "in_flight": scenario.concurrency,
        "per_run_kb": round(1024 * (steady_rss - idle) / scenario.concurrency, 1),
    }


def _cpu_figures(load: _Load, completed: int, ideal_s: float) -> dict[str, Any]:
    """CPU by process: % of a core, per run, how many runs one core carries; the machine's own."""
    cpu, elapsed = load.cpu_s, load.elapsed_s
    ours = sum(cpu.values()) + sum(c["cpu_s"] for c in load.clients)
    per_run = {name: round(1000 * value / completed, 1) if completed else None for name, value in cpu.items()}
    return {
        "cpu_percent": {name: round(100 * value / elapsed, 1) for name, value in cpu.items()},
        "cpu_ms_per_run": per_run,
        "in_flight_one_core_carries": {
            name: round(ideal_s * completed / value) if value else None for name, value in cpu.items()
        },
        "client_cpu_percent": [round(100 * c["cpu_s"] / elapsed, 1) for c in load.clients],
        "machine_cpu_percent": {
            "cores": os.cpu_count(),
            "busy": round(100 * load.machine_busy_s / elapsed, 1),
            "other_processes": round(max(0.0, 100 * (load.machine_busy_s - ours) / elapsed), 1),
        },
    }


def verdict(results: Mapping[str, Any], max_added_ms: float, max_kb: float) -> list[str]:
    """What failed at this level, in the issue's terms; empty when the level passed."""
    failed = []
    if results["errors"]:
        failed.append(f"{results['errors']} errors: {results['errors_by_kind']}")
    p99 = results["added_per_step_ms"]["p99"]
    if p99 is None or p99 > max_added_ms:
        failed.append(f"p99 added latency per step {p99} ms > {max_added_ms} ms")
    per_run = results["gateway_memory"]["per_run_kb"]
    if per_run > max_kb:
        failed.append(f"gateway memory {per_run} kB per in-flight run > {max_kb} kB")
    if not results["memory"]["flat"]:
        failed.append("memory grew between the first and the last window")
    return failed


def diagnose(results: Mapping[str, Any], scenario: Level) -> list[str]:
    """The likely reasons a level failed, from the figures every level records."""
    reasons = [
        *_saturated_processes(results),
        *_exhausted_limits(results, scenario),
        *_refused_or_late(results, scenario),
        *_cpu_headroom(results, scenario),
    ]
    if not reasons:
        busiest = max(results["cpu_percent"], key=results["cpu_percent"].get)
        reasons.append(
            f"no limit reached outright; the busiest process is {busiest} "
            f"({results['cpu_percent'][busiest]} % of a core)"
        )
    return reasons


def _saturated_processes(results: Mapping[str, Any]) -> list[str]:
    """Single-threaded processes at their core's limit, and a machine out of CPU."""
    reasons = [
        f"the {name} process is at {percent} % of one core: its single event loop is the "
        "bottleneck and every stream through it waits its turn"
        for name, percent in results["cpu_percent"].items()
        if percent >= BUSY_CPU_PERCENT
    ]
    reasons += [
        f"client process {i} is at {percent} % of one core: the load generator, not the "
        "runtime, limits this level (add --clients)"
        for i, percent in enumerate(results["client_cpu_percent"])
        if percent >= BUSY_CPU_PERCENT
    ]
    cpus = os.cpu_count() or 1
    total = sum(results["cpu_percent"].values()) + sum(results["client_cpu_percent"])
    if total >= NEAR_LIMIT * 100 * cpus:
        reasons.append(
            f"the machine is out of CPU: services and clients together use {round(total)} % of {cpus} cores"
        )
    others = results["machine_cpu_percent"]["other_processes"]
    if others >= SHARED_MACHINE_PERCENT:
        reasons.append(
            f"other processes on the machine used {others} % of a core meanwhile: the services "
            "waited for CPU that was not theirs, so this level says little about the runtime"
        )
    return reasons


def _exhausted_limits(results: Mapping[str, Any], scenario: Level) -> list[str]:
    """Descriptor limits and the reasoner's connection pool."""
    reasons = [
        f"{name} holds {fds['peak']} descriptors of its limit of {fds['soft_limit']}"
        for name, fds in results["fds"].items()
        if fds["soft_limit"] and fds["peak"] >= NEAR_LIMIT * fds["soft_limit"]
    ]
    model_connections = results["fds"]["model"]["peak"] - results["fds"]["model"]["idle"]
    if scenario.concurrency > OPENAI_POOL and model_connections >= NEAR_LIMIT * OPENAI_POOL:
        reasons.append(
            f"the model server holds ~{model_connections} more connections than idle: the reasoner's "
            f"openai client pool ({OPENAI_POOL} connections by default) is full and model calls queue in it"
        )
    return reasons


def _refused_or_late(results: Mapping[str, Any], scenario: Level) -> list[str]:
    """Runs the gateway's admission cap refused, and runs past the client's deadline."""
    reasons = []
    errors = results["errors_by_kind"]
    cap = scenario.max_active_runs or GatewaySettings.max_active_runs
    refused = sum(n for kind, n in errors.items() if "RESOURCE_EXHAUSTED" in kind)
    if refused or scenario.concurrency > cap:
        reasons.append(
            f"the gateway admits at most {cap} active runs (AGENTLOOP_MAX_ACTIVE_RUNS, "
            f"--max-active-runs); {refused} runs were refused with RESOURCE_EXHAUSTED"
        )
    deadline = sum(n for kind, n in errors.items() if "DEADLINE" in kind)
    if deadline:
        reasons.append(f"{deadline} runs passed the client's deadline: queues grew faster than they drained")
    return reasons


def _cpu_headroom(results: Mapping[str, Any], scenario: Level) -> list[str]:
    """The service whose CPU per run lets one core carry fewer runs than the level asks."""
    carries = results["in_flight_one_core_carries"]
    tightest = min((name for name in carries if carries[name]), key=carries.get, default=None)
    if tightest is None or carries[tightest] >= scenario.concurrency:
        return []
    return [
        f"at {results['cpu_ms_per_run'][tightest]} ms of CPU per run, one core lets the {tightest} "
        f"keep only ~{carries[tightest]} runs of {results['ideal_run_ms']} ms in flight"
    ]


def measure(scenario: Level, database_url: str) -> dict[str, Any]:
    """Fresh services on `database_url`, one level of load, services stopped; the level's figures."""
    script = scenario.script()
    # Every run comes from this one host, as one caller: the bounds that share a gateway between
    # callers and addresses would measure themselves, not the runtime. They are lifted here.
    cap = scenario.max_active_runs or GatewaySettings.max_active_runs
    extra_env = {
        "AGENTLOOP_MAX_ACTIVE_RUNS_PER_CALLER": str(cap),
        "AGENTLOOP_MAX_CALLS_PER_PEER": "0",
        "AGENTLOOP_MAX_STREAMS_PER_CONNECTION": "0",
        "AGENTLOOP_MAX_CALLS": "0",
    }
    if scenario.max_active_runs is not None:
        extra_env["AGENTLOOP_MAX_ACTIVE_RUNS"] = str(scenario.max_active_runs)
    with running_services(script, database_url, extra_env) as (addr, pids):
        return asyncio.run(drive(addr, pids, scenario, ideal_run_s(script)))


def measure_on(scenario: Level, postgres: bool) -> dict[str, Any]:
    """One level on the embedded SQLite store, or on a throwaway Postgres database."""
    if not postgres:
        with tempfile.TemporaryDirectory() as tmp:
            return measure(scenario, f"sqlite+aiosqlite:///{tmp}/inflight.db")

    async def on_postgres() -> dict[str, Any]:
        async with bench_database() as url:
            return await asyncio.to_thread(measure, scenario, url)

    return asyncio.run(on_postgres())


def summary(level: Mapping[str, Any]) -> str:
    r = level["results"]
    mem = r["gateway_memory"]
    lines = [
        f"{level['concurrency']} in flight for {r['elapsed_s']} s: {r['runs_completed']} runs, "
        f"errors {r['errors']} {r['errors_by_kind'] or ''}".rstrip(),
        f"  run p50 {r['p50_run_ms']} ms, p99 {r['p99_run_ms']} ms (ideal {r['ideal_run_ms']} ms); "
        f"added per step p50 {r['added_per_step_ms']['p50']} ms, p99 {r['added_per_step_ms']['p99']} ms",
        f"  gateway {mem['idle_mib']} MiB idle, {mem['steady_mib']} MiB with {mem['in_flight']} in flight: "
        f"{mem['per_run_kb']} kB per run; memory {'flat' if r['memory']['flat'] else 'GREW'}",
        "  cpu % "
        + ", ".join(f"{name} {value}" for name, value in r["cpu_percent"].items())
        + f", clients {r['client_cpu_percent']}; machine busy {r['machine_cpu_percent']['busy']} % "
        f"of {r['machine_cpu_percent']['cores']} cores, {r['machine_cpu_percent']['other_processes']} % "
        "not ours",
        "  one core keeps in flight at most: "
        + ", ".join(f"{name} ~{n}" for name, n in r["in_flight_one_core_carries"].items()),
        "  " + ("PASS" if not level["failed"] else "FAIL: " + "; ".join(level["failed"])),
    ]
    lines += [f"  why: {reason}" for reason in level.get("why", [])]
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = bench_parser(__doc__)
    parser.add_argument("--concurrency", type=int, default=1000, help="runs in flight at once")
    parser.add_argument("--minutes", type=float, default=10.0, help="how long to keep them in flight")
    parser.add_argument(
        "--ramp", help="comma-separated concurrency levels (e.g. 1000,2000,5000), each on fresh services"
    )
    parser.add_argument("--level-minutes", type=float, default=1.5, help="minutes per --ramp level")
    parser.add_argument(
        "--clients",
        type=int,
        help=f"client processes sharing the load (default: one per {RUNS_PER_CLIENT} runs in flight)",
    )
    parser.add_argument(
        "--keep-going",
        action="store_true",
        help="measure every --ramp level, not only up to the first failure",
    )
    parser.add_argument("--first-token-ms", type=float, default=2000.0, help="model latency to first token")
    parser.add_argument("--tokens-per-s", type=float, default=50.0, help="model streaming speed")
    parser.add_argument("--answer-tokens", type=int, default=50, help="length of the final answer")
    parser.add_argument("--max-active-runs", type=int, help="the gateway's admission cap (default: its own)")
    parser.add_argument("--max-added-ms", type=float, default=50.0, help="p99 added latency per step allowed")
    parser.add_argument("--max-kb-per-run", type=float, default=100.0, help="gateway kB per run allowed")
    parser.add_argument("--postgres", action="store_true", help="a throwaway Postgres database, not SQLite")
    parser.add_argument("--out", type=Path, default=RESULTS / "inflight.json")
    return parser


def _levels(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[list[int], float]:
    """The concurrency levels to measure and the minutes each; a usage error when one is not positive."""
    levels = [int(level) for level in args.ramp.split(",")] if args.ramp else [args.concurrency]
    minutes = args.level_minutes if args.ramp else args.minutes
    clients_ok = args.clients is None or args.clients >= 1
    if minutes <= 0 or not clients_ok or min(levels) < 1 or args.tokens_per_s <= 0:
        parser.error("minutes, --clients, concurrency and --tokens-per-s must be positive")
    return levels, minutes


def _measure_levels(args: argparse.Namespace, levels: list[int], minutes: float) -> list[dict[str, Any]]:
    """Each level on fresh services, up to the first that fails (all of them with --keep-going)."""
    reports: list[dict[str, Any]] = []
    for concurrency in levels:
        scenario = Level(
            concurrency=concurrency,
            seconds=60 * minutes,
            first_token_ms=args.first_token_ms,
            tokens_per_s=args.tokens_per_s,
            answer_tokens=args.answer_tokens,
            clients=args.clients or -(-concurrency // RUNS_PER_CLIENT),
            max_active_runs=args.max_active_runs,
        )
        results = measure_on(scenario, args.postgres)
        failed = verdict(results, args.max_added_ms, args.max_kb_per_run)
        level: dict[str, Any] = {"concurrency": concurrency, "failed": failed}
        if failed:
            level["why"] = diagnose(results, scenario)
        level["results"] = results
        reports.append(level)
        print(summary(level), file=sys.stderr, flush=True)
        if failed and not args.keep_going:
            break
    return reports


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    levels, minutes = _levels(parser, args)
    soft, hard = raise_fd_limit()
    reports = _measure_levels(args, levels, minutes)
    passed = all(not level["failed"] for level in reports)
    publish(
        {"levels": reports},
        args.out,
        scenario={
            "steps": STEPS,
            "tools_per_step": 1,
            "first_token_ms": args.first_token_ms,
            "tokens_per_s": args.tokens_per_s,
            "answer_tokens": args.answer_tokens,
            "stream_mode": agent_pb2.StreamMode.Name(STREAM_MODE),
            "clients": [len(level["results"]["client_cpu_percent"]) for level in reports],
            "seconds_per_level": 60 * minutes,
            "levels": levels,
        },
        backend="postgres" if args.postgres else "sqlite",
        event_loop="asyncio" if loop_factory() is None else "uvloop",
        fd_limit={"soft": soft, "hard": hard},
        passed=passed and len(reports) == len(levels),
    )
    print("\n".join(summary(level) for level in reports))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
