"""agentloop's side of the peer benchmark: its three services as processes, measured like the peer.

The services are started with `agentloop.cli.demo.services` (reasoner, tools,
gateway, each its own process) against the shared fake model, with the
`lookup` tool module loaded into the tool service and the gateway on a fresh
database of the shared Postgres cluster, or on an embedded SQLite file. Each
run is one `Agent.Invoke` on a new thread, the counterpart of the peer's
`ainvoke`: nothing streams, so the final answer is generated once.

Measured around the timed runs only, as the peer driver does: latency per run,
runs/s, CPU of every process (each service, Postgres, the fake model, this
client), storage written (relation sizes or file bytes, payload bytes of the
runs' rows, WAL bytes) and the fake model's own count of calls and of
inconsistent conversations. Errors and invalid results are counted, never
dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import grpc

from agentloop.cli.demo import services
from agentloop.v1 import agent_pb2, agent_pb2_grpc
from bench.peer.matrix import Config
from bench.peer.processes import FakeModel, PostgresCluster
from bench.pg import bench_database
from bench.workload import cpu_seconds, percentile
from gateway.store.factory import open_store

SERVICES = ("reasoner", "tools", "gateway")
TOOL_MODULE = "bench.peer.lookup_tool"
RUN_TIMEOUT_S = 600.0
_ERROR_CHARS = 500


@dataclass
class Stack:
    """One running agentloop: where its gateway listens, its processes and its store."""

    backend: str
    url: str
    addr: str
    pids: dict[str, int]
    cluster: PostgresCluster | None = None
    loop_detection_off: list[str] = field(default_factory=list)
    """Configurations whose runs had loop detection turned off because it stopped a warm-up run."""

    @property
    def sqlite_file(self) -> Path | None:
        return Path(self.url.split("///", 1)[1]) if self.backend == "sqlite" else None

    @property
    def pg_url(self) -> str:
        """The store's database as a plain libpq URL (for asyncpg)."""
        return self.url.replace("postgresql+asyncpg://", "postgresql://", 1)


@contextlib.asynccontextmanager
async def agentloop_stack(
    backend: str, model: FakeModel, tool_ms: float, cluster: PostgresCluster
) -> AsyncIterator[Stack]:
    """The three services on `backend` ("postgres": a fresh database in `cluster`; "sqlite": a temp file)."""
    async with contextlib.AsyncExitStack() as stack:
        if backend == "postgres":
            os.environ["AGENTLOOP_BENCH_POSTGRES"] = cluster.dsn
            url = await stack.enter_async_context(bench_database())
        else:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="peerbench-sqlite."))
            url = f"sqlite+aiosqlite:///{folder}/agentloop.db"
        env = dict(os.environ)
        env.update(
            OPENAI_BASE_URL=model.base_url,
            OPENAI_API_KEY="not-needed",
            AGENTLOOP_MODEL="fake-model",
            AGENTLOOP_MODEL_MAX_RETRIES="0",
            AGENTLOOP_TOOL_MODULES=TOOL_MODULE,
            PEER_BENCH_TOOL_MS=str(tool_ms),
            DATABASE_URL=url,
        )
        ports = stack.enter_context(services(env))
        pids = {name: ports[f"{name}_pid"] for name in SERVICES}
        yield Stack(
            backend, url, f"127.0.0.1:{ports['gateway']}", pids, cluster if backend == "postgres" else None
        )


def _self_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def problem(reply: agent_pb2.InvokeResponse, steps: int, fanout: int, tokens: int) -> str | None:
    """Why a run's outcome is not the workload's (None when it is): the same checks as the peer's."""
    md = reply.final.metadata
    results = reply.tool_results
    failed = [r for r in results if r.is_error or "value-for-" not in r.content]
    words = len(reply.final.final_reply.split())
    if md.stop_reason != agent_pb2.STOP_REASON_COMPLETED or md.steps_taken != steps:
        stop = agent_pb2.StopReason.Name(md.stop_reason)
        return f"stop_reason={stop} steps_taken={md.steps_taken} (expected {steps})"
    if len(results) != steps * fanout or failed:
        first = failed[0].content[:200] if failed else ""
        return f"{len(results)} tool results, {len(failed)} failed (expected {steps * fanout}) {first}"
    if words != tokens:
        return f"final answer of {words} words (expected {tokens})"
    return None


async def run_many(
    n: int, concurrency: int, fn: Callable[[int], Awaitable[agent_pb2.InvokeResponse]]
) -> tuple[list[float], list[str], list[agent_pb2.InvokeResponse]]:
    """fn(i) for i in range(n), at most `concurrency` in flight; latencies, errors, replies."""
    latencies = [float("nan")] * n
    errors: list[str] = []
    replies: list[agent_pb2.InvokeResponse] = []
    todo = iter(range(n))

    async def worker() -> None:
        for i in todo:
            started = time.perf_counter()
            try:
                replies.append(await fn(i))
            except grpc.aio.AioRpcError as exc:
                errors.append(f"{exc.code().name}: {exc.details()}"[:_ERROR_CHARS])
            except Exception as exc:  # the benchmark reports every failure instead of stopping
                errors.append(f"{type(exc).__name__}: {exc}"[:_ERROR_CHARS])
            latencies[i] = time.perf_counter() - started

    await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, n)))))
    return latencies, errors, replies


async def _pg_snapshot(url: str) -> tuple[int, str]:
    """Total size of the store's tables (with indexes and TOAST) and the cluster's WAL insert position."""
    conn = await asyncpg.connect(url)
    try:
        size = await conn.fetchval(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r'"
        )
        lsn = await conn.fetchval("SELECT pg_current_wal_insert_lsn()::text")
        return int(size), str(lsn)
    finally:
        await conn.close()


async def _wal_bytes(url: str, before: str, after: str) -> int:
    conn = await asyncpg.connect(url)
    try:
        diff = await conn.fetchval(
            "SELECT pg_wal_lsn_diff($1::text::pg_lsn, $2::text::pg_lsn)", after, before
        )
        return int(diff)
    finally:
        await conn.close()


def _sqlite_bytes(path: Path) -> int:
    """The database file plus its write-ahead log, as the disk holds them."""
    return sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists())


async def _payload(url: str, run_ids: list[str]) -> dict[str, int]:
    """Bytes of the runs' rows by kind, as the store itself reports them."""
    totals = {"checkpoint": 0, "message": 0, "event": 0, "tool_result": 0}
    store = await open_store(url, migrate=False)
    try:
        for run_id in run_ids:
            stats = await store.storage(run_id)
            totals["checkpoint"] += stats.checkpoint_bytes
            totals["message"] += stats.message_bytes
            totals["event"] += stats.event_bytes
            totals["tool_result"] += stats.tool_result_bytes
    finally:
        await store.close()
    return totals


class _Storage:
    """Storage written between `start()` and `finish()`."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.size0 = 0
        self.lsn0 = ""

    async def start(self) -> None:
        if self.stack.sqlite_file is not None:
            self.size0 = _sqlite_bytes(self.stack.sqlite_file)
        else:
            self.size0, self.lsn0 = await _pg_snapshot(self.stack.pg_url)

    async def finish(self, run_ids: list[str], runs: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.stack.sqlite_file is not None:
            out["table_bytes_per_run"] = round((_sqlite_bytes(self.stack.sqlite_file) - self.size0) / runs, 1)
            out["wal_bytes_per_run"] = None
        else:
            size1, lsn1 = await _pg_snapshot(self.stack.pg_url)
            out["table_bytes_per_run"] = round((size1 - self.size0) / runs, 1)
            wal = await _wal_bytes(self.stack.pg_url, self.lsn0, lsn1)
            out["wal_bytes_per_run"] = round(wal / runs, 1)
        payload = await _payload(self.stack.url, run_ids)
        out["payload_bytes_per_run"] = {k: round(v / runs, 1) for k, v in payload.items()}
        out["payload_bytes_per_run_total"] = round(sum(payload.values()) / runs, 1)
        out["state_bytes_per_run"] = round((payload["checkpoint"] + payload["message"]) / runs, 1)
        return out


def _summary(latencies: list[float]) -> dict[str, float]:
    ms = [x * 1000.0 for x in latencies]
    return {
        "p50_ms": round(percentile(ms, 50), 2),
        "p95_ms": round(percentile(ms, 95), 2),
        "p99_ms": round(percentile(ms, 99), 2),
        "mean_ms": round(sum(ms) / len(ms), 2),
        "min_ms": round(min(ms), 2),
        "max_ms": round(max(ms), 2),
    }


async def _warm_up_loops(
    stack: Stack, config: Config, one: Callable[[int], Awaitable[agent_pb2.InvokeResponse]]
) -> bool:
    """Run the warm-up; whether loop detection stopped a run (this workload then runs without it)."""
    _, errors, replies = await run_many(config.warmup, min(config.concurrency, config.warmup), one)
    if errors:
        raise RuntimeError(f"{stack.backend} warm-up failed: {errors[0]}")
    return any(r.final.metadata.stop_reason == agent_pb2.STOP_REASON_LOOP_DETECTED for r in replies)


def _cpu_now(stack: Stack) -> tuple[dict[str, float], float | None, float]:
    """CPU seconds so far of each service, of Postgres (when it runs here) and of this process."""
    services = {name: cpu_seconds(pid) for name, pid in stack.pids.items()}
    pg = stack.cluster.cpu_seconds() if stack.cluster else None
    return services, pg, _self_cpu_s()


async def measure(stack: Stack, model: FakeModel, config: Config, tokens: int) -> dict[str, Any]:
    """Warm up, then time `config.runs` runs at `config.concurrency`; the figures of one configuration."""
    options = agent_pb2.RunOptions(max_steps=min(1000, config.steps + 5), tools=["lookup"])
    prompt = f"steps={config.steps} fanout={config.fanout} tokens={tokens}"
    request = agent_pb2.InvokeRequest(input=prompt, options=options)
    loop_detection = "default"
    async with grpc.aio.insecure_channel(stack.addr) as channel:
        stub = agent_pb2_grpc.AgentStub(channel)

        async def one(_i: int) -> agent_pb2.InvokeResponse:
            reply: agent_pb2.InvokeResponse = await stub.Invoke(request, timeout=RUN_TIMEOUT_S)
            return reply

        if config.warmup and await _warm_up_loops(stack, config, one):
            request.options.loop_detection.disabled = True
            loop_detection = "disabled: the default detector stopped a warm-up run of this workload"
            stack.loop_detection_off.append(config.label)
        model.reset_stats()
        storage = _Storage(stack)
        await storage.start()
        cpu0, pg0, self0 = _cpu_now(stack)
        started = time.perf_counter()
        latencies, errors, replies = await run_many(config.runs, config.concurrency, one)
        wall = time.perf_counter() - started
        cpu1, pg1, self1 = _cpu_now(stack)
        llm = model.stats()
    steps_done = config.runs * config.steps
    by_service = {name: round((cpu1[name] - cpu0[name]) * 1000 / steps_done, 3) for name in SERVICES}
    bad = [p for p in (problem(r, config.steps, config.fanout, tokens) for r in replies) if p]
    result: dict[str, Any] = {
        "backend": stack.backend,
        "wall_s": round(wall, 4),
        "runs_per_s": round(config.runs / wall, 3),
        **_summary(latencies),
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "invalid_results": len(bad),
        "first_invalid": bad[0] if bad else None,
        "cpu_ms_per_step_by_service": by_service,
        "cpu_ms_per_step_services": round(sum(by_service.values()), 3),
        "client_cpu_ms_per_step": round((self1 - self0) * 1000 / steps_done, 3),
        "pg_cpu_s": round(pg1 - pg0, 3) if pg0 is not None and pg1 is not None else None,
        "llm_cpu_ms_per_step": round(float(llm["cpu_s"]) * 1000 / steps_done, 3),
        "llm_server": llm,
        "llm_calls_expected": config.runs * (config.steps + 1),
        "loop_detection": loop_detection,
    }
    result["storage"] = await storage.finish([r.run_id for r in replies], config.runs)
    return result
