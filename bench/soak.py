"""Soak: mixed runs against the services as processes while every kind of service is killed -9.

`python -m bench.soak --minutes 30` (`make soak`) starts the scripted model,
the reasoner, the ToolService and two gateways on one throwaway Postgres
database (short leases, so a killed gateway's runs are adopted by the other),
then for the given time:

- `--clients` closed-loop clients start runs of six workloads: a streamed Run
  with tokens, Invoke, a multi-step Run with parallel tool calls, a run that
  pauses for approval and is resumed (sometimes by two clients at once,
  sometimes left paused on purpose), a run that is cancelled midway, and a
  run whose model names its calls call_0, call_1… in every round. A
  client whose stream breaks reattaches with Watch(after_sequence = the last
  number it saw) on whichever gateway answers;
- a seeded plan kills a random service (reasoner, ToolService or one of the
  gateways) with SIGKILL every `--kill-every-s` on average, each kind at least
  once, and restarts it on the same port after a short pause; once, the
  reasoner stays down for `--outage-s`.

When the time is up, every killed service is back, clients start nothing new
and follow their runs to the end; then the invariants of bench/soak_checks.py
are checked against the runs table, the stored events (Watch from 0), the
threads (GetThread) and the tools' durable execution log. The report (figures
and each failure by run, call and sequence) goes to bench/results/soak.json;
the exit status is 1 when any invariant failed.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import asyncpg
import grpc

from agentloop.v1 import agent_pb2, common_pb2
from bench.soak_checks import INVARIANTS, RunRow, check_all, read_tool_log, unstored_events
from bench.soak_clients import USER, Clients, RunRecord, soak_script, stored_events
from bench.soak_fleet import Fleet, plan_chaos, start_fleet, unleash
from bench.workload import bench_parser, percentile, publish, write_script
from gateway.store.scope import client_thread_id

RESULTS = Path(__file__).parent / "results"


@dataclass(frozen=True)
class SoakConfig:
    """How long, how hard, and how the dice fall."""

    duration_s: float = 1800.0
    clients: int = 8
    kill_every_s: float = 20.0
    pause_s: tuple[float, float] = (0.5, 3.0)
    outage_s: float = 60.0
    settle_s: float = 120.0
    """How long after the chaos every run has to reach its end."""
    lease_s: float = 2.0
    orphan_scan_s: float = 0.5
    seed: int = 1
    leave_paused_rate: float = 0.1
    double_resume_rate: float = 0.3


@dataclass
class SoakReport:
    """Figures and the invariants' failures."""

    figures: dict[str, Any]
    violations: dict[str, list[str]]

    @property
    def ok(self) -> bool:
        return not any(self.violations.values())

    def describe(self, limit: int = 15) -> str:
        """One line per figure group, then each failed invariant with its first failures."""
        f = self.figures
        lines = [
            f"runs {f['runs']}; kills {f['kills']}; reasoner outage {f['outage_s']} s; "
            f"latency p50 {f['latency_ms']['p50']} ms p99 {f['latency_ms']['p99']} ms; "
            f"none queued or running {f['drained_after_s']} s after the chaos",
        ]
        for name in INVARIANTS:
            found = self.violations.get(name, [])
            lines.append(f"{name}: {len(found)}" + (" FAILED" if found else " ok"))
            lines.extend(f"  - {item}" for item in found[:limit])
            if len(found) > limit:
                lines.append(f"  ... {len(found) - limit} more")
        return "\n".join(lines)


def _libpq(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://", 1)


async def read_runs(database_url: str) -> list[RunRow]:
    conn = await asyncpg.connect(_libpq(database_url))
    try:
        rows = await conn.fetch("SELECT run_id, thread_id, status, owner FROM runs ORDER BY created_at")
    finally:
        await conn.close()
    # The runs table keys threads per user; the client's id is what the Agent API takes.
    return [
        RunRow(r["run_id"], client_thread_id(r["thread_id"]), r["status"], r["owner"] or "") for r in rows
    ]


async def wait_until_drained(database_url: str, since: float, deadline: float) -> float | None:
    """Seconds from `since` until the runs table first held no queued or running run (None: never)."""
    while time.monotonic() <= deadline:
        rows = await read_runs(database_url)
        if all(r.status not in ("queued", "running") for r in rows):
            return round(time.monotonic() - since, 1)
        await asyncio.sleep(0.5)
    return None


async def _with_retries(what: str, attempt: Any) -> Any:
    """A read of the evidence, retried a few times (a gateway may still be warming its channels)."""
    for tries in range(5):
        try:
            return await attempt()
        except grpc.aio.AioRpcError:
            if tries == 4:
                raise
            await asyncio.sleep(1)
    raise AssertionError(what)


async def collect_evidence(
    fleet: Fleet, rows: Sequence[RunRow]
) -> tuple[dict[str, list[agent_pb2.RunEvent]], dict[str, list[common_pb2.Message]]]:
    """Every run's stored events and every thread's conversation, through a gateway."""
    from agentloop.v1 import agent_pb2_grpc

    stored: dict[str, list[agent_pb2.RunEvent]] = {}
    threads: dict[str, list[common_pb2.Message]] = {}
    async with grpc.aio.insecure_channel(fleet.gateway_address()) as channel:
        stub = agent_pb2_grpc.AgentStub(channel)
        for row in rows:
            if row.status in ("queued", "running"):
                continue  # Watch would wait for its end; it is reported as unfinished
            stored[row.run_id] = await _with_retries(
                f"events of {row.run_id}", lambda r=row: _list(stored_events(stub, r.run_id))
            )
        for thread_id in sorted({row.thread_id for row in rows}):
            messages: list[common_pb2.Message] = []
            token = None
            while token != "":
                request = agent_pb2.GetThreadRequest(
                    thread_id=thread_id, user_id=USER, page_token=token or ""
                )
                reply = await _with_retries(thread_id, lambda q=request: stub.GetThread(q, timeout=10))
                messages.extend(reply.messages)
                token = reply.next_page_token
            threads[thread_id] = messages
    return stored, threads


async def _list(events: Any) -> list[agent_pb2.RunEvent]:
    return [e async for e in events]


def figures(
    config: SoakConfig,
    fleet: Fleet,
    records: Sequence[RunRecord],
    rows: Sequence[RunRow],
    drained: float | None,
) -> dict[str, Any]:
    return {
        "runs": _run_counts(records, rows),
        "kills": dict(fleet.kills),
        "outage_s": fleet.outages[0] if fleet.outages else 0.0,
        "drained_after_s": drained,
        "latency_ms": _latencies_ms(records),
        "streams": _stream_counts(records),
        "errors_seen_with_reasoner_up_5s": _errors_with_reasoner_up(fleet, records, 5),
        "resumes": sum(r.resumes for r in records),
        "cancels": sum(r.cancels for r in records),
        "client_notes": dict(Counter(n for r in records for n in r.notes)),
        "config": asdict(config),
    }


def _run_counts(records: Sequence[RunRecord], rows: Sequence[RunRow]) -> dict[str, Any]:
    """Runs by stored status; client attempts outnumber runs when a retry joined its first attempt."""
    statuses = Counter(row.status for row in rows)
    return {
        "started": len(rows),
        "client_attempts": len(records),
        **{status: statuses.get(status, 0) for status in ("completed", "failed", "cancelled", "paused")},
        "queued_or_running": statuses.get("queued", 0) + statuses.get("running", 0),
        "by_workload": dict(Counter(r.workload for r in records)),
    }


def _latencies_ms(records: Sequence[RunRecord]) -> dict[str, Any]:
    """Start-to-end latency of the runs that ended; runs left paused on purpose would skew it."""
    latencies = [r.ended - r.started for r in records if r.ended is not None and not r.leave_paused]
    return {
        "runs": len(latencies),
        "p50": round(percentile(latencies, 50) * 1000) if latencies else None,
        "p99": round(percentile(latencies, 99) * 1000) if latencies else None,
    }


def _stream_counts(records: Sequence[RunRecord]) -> dict[str, Any]:
    """How the clients' streams ended, so broken ones and Watch reattachments show."""
    streams = [s for r in records for s in r.streams]
    return {
        "total": len(streams),
        "ends": dict(Counter(s.end.split(":")[0] if s.end else "open" for s in streams)),
        "broken_by_code": dict(Counter(s.end for s in streams if s.end.startswith("broken"))),
        "reattached_with_watch": sum(1 for s in streams if s.rpc == "Watch"),
    }


def _errors_with_reasoner_up(fleet: Fleet, records: Sequence[RunRecord], up_s: float) -> int:
    """Runs that ended in an error although the reasoner had been up for `up_s`: not explained by chaos."""
    return sum(
        1
        for r in records
        if r.outcome == "error" and r.ended is not None and fleet.services["reasoner"].up_for(r.ended) > up_s
    )


def failure_causes(stored: dict[str, list[agent_pb2.RunEvent]]) -> dict[str, int]:
    """Failed runs by error code and node (from their stored error events)."""
    causes: Counter[str] = Counter()
    for events in stored.values():
        for event in events:
            if event.WhichOneof("event") == "error":
                causes[f"{event.error.code} in {event.error.node or '-'}"] += 1
    return dict(causes)


async def run_soak(config: SoakConfig, database_url: str, workdir: Path) -> SoakReport:
    """The whole soak against `database_url` (a fresh Postgres database); logs go under `workdir`."""
    script = write_script(soak_script(), workdir / "soak-script.json")
    fleet = await start_fleet(database_url, script, workdir, config.lease_s, config.orphan_scan_s)
    clients = Clients(fleet, config.seed, config.leave_paused_rate, config.double_resume_rate)
    try:
        plan = plan_chaos(
            config.seed, config.duration_s, config.kill_every_s, config.pause_s, config.outage_s
        )
        started = time.monotonic()
        stop_at = started + config.duration_s
        give_up_at = stop_at + config.settle_s
        driving = asyncio.create_task(clients.drive(config.clients, stop_at, give_up_at))
        await unleash(fleet, plan, started, config.seed + 1)
        await asyncio.sleep(max(0.0, stop_at - time.monotonic()))
        drained = await asyncio.gather(
            driving, wait_until_drained(database_url, time.monotonic(), give_up_at)
        )
        rows = await read_runs(database_url)
        stored, threads = await collect_evidence(fleet, rows)
        log = read_tool_log(fleet.tool_log)
        violations = check_all(clients.records, rows, stored, threads, log)
        report = figures(config, fleet, clients.records, rows, drained[1])
        report["runs"]["failed_by_cause"] = failure_causes(stored)
        report["tool_calls"] = {
            "executions_finished": sum(log.finished.values()),
            "executions_cut_short": sum(log.started.values()) - sum(log.finished.values()),
            "unreadable_log_lines": log.unreadable_lines,
        }
        report["events_seen_never_stored"] = len(unstored_events(clients.records, stored))
        report["logs"] = str(workdir / "logs")
        return SoakReport(report, violations)
    finally:
        await clients.close()
        await fleet.stop()


async def _soak_on_bench_database(config: SoakConfig, workdir: Path) -> SoakReport:
    # The tests' throwaway database: on $AGENTLOOP_TEST_POSTGRES (default 127.0.0.1:5432), or on a
    # private cluster started for the soak when that server cannot be reached.
    from tests.support.postgres import fresh_postgres_database

    async with fresh_postgres_database() as url:
        return await run_soak(config, url, workdir)


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--minutes", type=float, default=30.0, help="how long the chaos lasts")
    parser.add_argument("--clients", type=int, default=SoakConfig.clients, help="concurrent clients")
    parser.add_argument(
        "--kill-every-s", type=float, default=SoakConfig.kill_every_s, help="mean time between kills"
    )
    parser.add_argument(
        "--outage-s", type=float, default=SoakConfig.outage_s, help="reasoner outage; 0 = none"
    )
    parser.add_argument("--settle-s", type=float, default=SoakConfig.settle_s, help="time for runs to end")
    parser.add_argument("--seed", type=int, default=SoakConfig.seed, help="seed of the kill plan and clients")
    parser.add_argument("--out", type=Path, default=RESULTS / "soak.json")
    args = parser.parse_args(argv)
    if args.minutes <= 0 or args.clients < 1 or args.kill_every_s <= 0 or args.outage_s < 0:
        parser.error("--minutes, --clients and --kill-every-s must be positive, --outage-s >= 0")
    config = SoakConfig(
        duration_s=args.minutes * 60,
        clients=args.clients,
        kill_every_s=args.kill_every_s,
        outage_s=args.outage_s,
        settle_s=args.settle_s,
        seed=args.seed,
    )
    workdir = Path(tempfile.mkdtemp(prefix="agentloop-soak-"))  # kept: the services' logs are evidence
    report = asyncio.run(_soak_on_bench_database(config, workdir))
    publish({**report.figures, "violations": report.violations}, args.out)
    print(report.describe(), file=sys.stderr)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
