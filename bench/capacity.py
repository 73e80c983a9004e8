"""What one Postgres primary and one gateway core sustain for agentloop's schema: the capacity model's inputs.

1. The machine's Postgres baseline: `pgbench -S` (read-only) and `pgbench -N`
   (a write transaction of 5 statements) on a throwaway database.
2. The store's cost per step, from a run of the real stack (model, reasoner,
   tools and gateway as processes, checkpointing to Postgres): the gateway's
   connections go through a counting proxy that reads the Postgres wire
   protocol, so statements (Execute/Query messages), round trips (Sync/Query)
   and bytes each way are counted exactly; transactions and rows come from
   pg_stat_database of the bench database, table growth from its size, and
   WAL bytes from pg_current_wal_lsn() around the run (cluster-wide: an idle
   window of the same length is measured just before and reported beside it,
   because other databases on the server write WAL too).
3. CPU per step of each service process (/proc), and the steps/s achieved.

From these it derives steps/s one primary sustains (commit-bound and
statement-bound estimates) and steps/s per gateway core; docs/capacity.md
explains the model. Writes bench/results/capacity.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import struct
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import grpc
from sqlalchemy.engine import make_url

from agentloop.cli.demo import Child, services
from agentloop.v1 import agent_pb2, agent_pb2_grpc
from bench.pg import bench_database
from bench.workload import bench_parser, bench_script, cpu_seconds, percentile, publish, write_script

RESULTS = Path(__file__).parent / "results"
SERVICES = ("reasoner", "tools", "gateway")
PG_HOST, PG_PORT = "127.0.0.1", 5432
# Untyped first messages of a Postgres connection: SSLRequest and GSSENCRequest codes.
_NEGOTIATION_CODES = (80877103, 80877104)
# pgbench -N: BEGIN, UPDATE accounts, SELECT, INSERT history, END.
PGBENCH_N_STATEMENTS = 5


@dataclass
class WireCounts:
    """What the gateway sent to and received from Postgres."""

    messages: Counter[str] = field(default_factory=Counter)
    bytes_to_server: int = 0
    bytes_to_client: int = 0
    connections: int = 0

    def snapshot(self) -> dict[str, int]:
        return {
            "statements": self.messages["E"] + self.messages["Q"],
            "round_trips": self.messages["S"] + self.messages["Q"],
            "bytes_to_server": self.bytes_to_server,
            "bytes_to_client": self.bytes_to_client,
        }


class CountingProxy:
    """A TCP proxy in front of Postgres that counts the client's protocol messages by type.

    Extended-protocol statements are Parse/Bind/Execute/Sync; one Execute is one
    statement run, one Sync (or a simple Query) one round trip that waits for
    the server.
    """

    def __init__(self) -> None:
        self.counts = WireCounts()
        self._server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        self.counts.connections += 1
        server_r, server_w = await asyncio.open_connection(PG_HOST, PG_PORT)
        tasks = [
            asyncio.create_task(self._client_to_server(client_r, server_w)),
            asyncio.create_task(self._server_to_client(server_r, client_w)),
        ]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        for writer in (client_w, server_w):
            writer.close()

    async def _client_to_server(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:  # untyped startup messages (negotiations, then the startup packet)
                header = await reader.readexactly(8)
                length, code = struct.unpack("!ii", header)
                body = await reader.readexactly(length - 8)
                self.counts.bytes_to_server += length
                writer.write(header + body)
                if code not in _NEGOTIATION_CODES:
                    break
            while True:
                kind = await reader.readexactly(1)
                (length,) = struct.unpack("!i", await reader.readexactly(4))
                body = await reader.readexactly(length - 4)
                self.counts.messages[kind.decode("ascii")] += 1
                self.counts.bytes_to_server += 1 + length
                writer.write(kind + struct.pack("!i", length) + body)
                await writer.drain()

    async def _server_to_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(65536):
                self.counts.bytes_to_client += len(data)
                writer.write(data)
                await writer.drain()


# --- pgbench ------------------------------------------------------------------------------------


def pgbench(database: str, args: list[str]) -> float:
    """Transactions per second of one pgbench run (excluding connection setup)."""
    env = dict(os.environ, PGHOST=PG_HOST, PGPORT=str(PG_PORT), PGUSER="postgres")
    out = subprocess.run(
        ["pgbench", *args, database], env=env, capture_output=True, text=True, check=True
    ).stdout
    match = re.search(r"tps = ([\d.]+) \((?:without initial connection time|excluding connections)", out)
    if match is None:
        raise RuntimeError(f"no tps in pgbench output:\n{out}")
    return float(match.group(1))


def baseline(database: str, seconds: int, scale: int) -> dict[str, Any]:
    env = dict(os.environ, PGHOST=PG_HOST, PGPORT=str(PG_PORT), PGUSER="postgres")
    init = ["pgbench", "-i", "-q", "-s", str(scale), database]
    subprocess.run(init, env=env, capture_output=True, check=True)
    runs = {
        "select_only_c8": ["-S", "-c", "8", "-j", "2"],
        "simple_update_c1": ["-N", "-c", "1", "-j", "1"],
        "simple_update_c8": ["-N", "-c", "8", "-j", "2"],
        "simple_update_c32": ["-N", "-c", "32", "-j", "2"],
    }
    tps = {name: pgbench(database, [*args, "-T", str(seconds), "-n"]) for name, args in runs.items()}
    return {"scale": scale, "seconds_each": seconds, "tps": tps}


# --- the stack ----------------------------------------------------------------------------------


# WAL records of one database between two LSNs (pg_walinspect): those touching its relations, and
# the commit records of the transactions that wrote them. Other databases on the server are left out.
_WAL_OF_DATABASE = """
WITH r AS (SELECT * FROM pg_get_wal_records_info($1::text::pg_lsn, $2::text::pg_lsn)),
ours AS (SELECT * FROM r WHERE block_ref LIKE '% rel %/' || $3::text || '/%'),
commits AS (
  SELECT * FROM r WHERE resource_manager = 'Transaction' AND record_type LIKE 'COMMIT%'
  AND xid IN (SELECT xid FROM ours WHERE xid <> '0')
),
heap AS (SELECT record_type FROM ours WHERE resource_manager IN ('Heap', 'Heap2'))
SELECT
  coalesce((SELECT sum(record_length) FROM ours), 0)
  + coalesce((SELECT sum(record_length) FROM commits), 0) AS bytes,
  coalesce((SELECT sum(fpi_length) FROM ours), 0) AS full_page_image_bytes,
  (SELECT count(*) FROM ours) + (SELECT count(*) FROM commits) AS records,
  (SELECT count(*) FROM commits) AS commits,
  (SELECT count(*) FROM heap WHERE record_type LIKE 'INSERT%') AS rows_inserted,
  (SELECT count(*) FROM heap WHERE record_type LIKE '%UPDATE%') AS rows_updated,
  (SELECT count(*) FROM heap WHERE record_type LIKE 'DELETE%') AS rows_deleted
"""
_WAL_FIELDS = ("bytes", "full_page_image_bytes", "records", "commits", "rows_inserted", "rows_updated")


async def wal_of_database(conn: asyncpg.Connection, start: str, end: str) -> dict[str, int]:
    """WAL bytes, full-page-image bytes and records this database wrote between two LSNs."""
    oid = await conn.fetchval("SELECT oid FROM pg_database WHERE datname = current_database()")
    row = await conn.fetchrow(_WAL_OF_DATABASE, start, end, str(oid))
    return {key: int(row[key]) for key in (*_WAL_FIELDS, "rows_deleted")}


async def pg_snapshot(conn: asyncpg.Connection, database: str) -> dict[str, Any]:
    """The bench database's size and the server's WAL position (both exact at once, unlike
    pg_stat_database's counters, which backends flush up to seconds later)."""
    row = await conn.fetchrow(
        "SELECT pg_database_size($1) AS size, pg_current_wal_lsn()::text AS lsn,"
        " pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint AS wal",
        database,
    )
    assert row is not None
    return dict(row)


async def backend_cpu(conn: asyncpg.Connection, database: str) -> dict[int, float]:
    """CPU seconds so far of every server process serving the database (but this connection's)."""
    pids = await conn.fetch(
        "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", database
    )
    cpu: dict[int, float] = {}
    for row in pids:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            cpu[row["pid"]] = cpu_seconds(row["pid"])
    return cpu


@dataclass(frozen=True)
class Finished:
    """One benchmark run: how long it took and where it is stored."""

    seconds: float
    run_id: str
    thread_id: str


async def one_run(stub: agent_pb2_grpc.AgentStub, steps: int) -> Finished:
    started = time.perf_counter()
    reply = await stub.Invoke(agent_pb2.InvokeRequest(input="bench"), timeout=300)
    if reply.final.metadata.steps_taken != steps:
        raise RuntimeError(f"expected {steps} steps, got {reply.final.metadata.steps_taken}")
    return Finished(time.perf_counter() - started, reply.run_id, reply.thread_id)


async def load(addr: str, runs: int, concurrency: int, steps: int) -> tuple[list[Finished], float]:
    async with grpc.aio.insecure_channel(addr) as channel:
        stub = agent_pb2_grpc.AgentStub(channel)
        gate = asyncio.Semaphore(concurrency)

        async def bounded() -> Finished:
            async with gate:
                return await one_run(stub, steps)

        started = time.perf_counter()
        finished = await asyncio.gather(*(bounded() for _ in range(runs)))
        return list(finished), time.perf_counter() - started


async def reads(addr: str, proxy: CountingProxy, finished: list[Finished]) -> dict[str, Any]:
    """What reading a finished run back costs the store: GetThread, and Watch replaying every event."""
    out: dict[str, Any] = {}
    async with grpc.aio.insecure_channel(addr) as channel:
        stub = agent_pb2_grpc.AgentStub(channel)

        async def get_thread(run: Finished) -> int:
            reply = await stub.GetThread(agent_pb2.GetThreadRequest(thread_id=run.thread_id), timeout=60)
            return len(reply.SerializeToString())

        async def watch(run: Finished) -> int:
            call = stub.Watch(agent_pb2.WatchRequest(run_id=run.run_id), timeout=60)
            return sum([len(r.SerializeToString()) async for r in call])

        for name, read in (("get_thread", get_thread), ("watch_replay", watch)):
            before = proxy.counts.snapshot()
            started = time.perf_counter()
            sizes = [await read(run) for run in finished]
            elapsed = time.perf_counter() - started
            after = proxy.counts.snapshot()
            out[name] = {
                **per({k: float(after[k] - before[k]) for k in after}, len(finished)),
                "reply_bytes": round(sum(sizes) / len(sizes), 1),
                "sequential_per_s": round(len(finished) / elapsed, 1),
            }
    return out


def per(delta: dict[str, float], count: int) -> dict[str, float]:
    return {key: round(value / count, 2) for key, value in delta.items()}


def _bench_env(database_url: str) -> dict[str, str]:
    """The services' environment: `database_url`, quiet logs, and the scripted model, never a real one."""
    env = dict(os.environ, DATABASE_URL=database_url, AGENTLOOP_LOG_LEVEL="WARNING")
    env.pop("OPENAI_BASE_URL", None)
    return env


async def _scripted_services(
    stack: contextlib.ExitStack[Any], tmp: Path, env: dict[str, str], steps: int
) -> dict[str, int]:
    """The services with a scripted model of `steps` steps; ports by name, and pids; `stack` stops them."""
    script = write_script(bench_script(steps, 3), tmp / "bench.json")
    cm = services(env, model_args=["--script", str(script), "--no-record"])
    ports = await asyncio.to_thread(cm.__enter__)
    stack.callback(cm.__exit__, None, None, None)
    return ports


async def measure_stack(url: str, steps: int, runs: int, concurrency: int) -> dict[str, Any]:
    database = make_url(url).database
    assert database is not None
    proxy = CountingProxy()
    await proxy.start()
    via_proxy = make_url(url).set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    stats = await asyncpg.connect(host=PG_HOST, port=PG_PORT, user="postgres", database=database)
    await stats.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        ports = await _scripted_services(stack, Path(tmp), _bench_env(via_proxy), steps)
        try:
            addr = f"127.0.0.1:{ports['gateway']}"
            pids = {name: ports[f"{name}_pid"] for name in SERVICES}
            await load(addr, 4, 4, steps)  # warm-up: connections, prepared statements, caches
            cpu0 = {name: cpu_seconds(pid) for name, pid in pids.items()}
            pg_cpu0 = await backend_cpu(stats, database)
            wire0 = proxy.counts.snapshot()
            pg0 = await pg_snapshot(stats, database)
            finished, wall = await load(addr, runs, concurrency, steps)
            pg1 = await pg_snapshot(stats, database)
            wire1 = proxy.counts.snapshot()
            cpu = {name: cpu_seconds(pid) - cpu0[name] for name, pid in pids.items()}
            pg_cpu1 = await backend_cpu(stats, database)
            # Backends opened during the load count whole; the pool keeps them, none closes.
            cpu["postgres_backends"] = sum(t - pg_cpu0.get(pid, 0.0) for pid, t in pg_cpu1.items())
            read_costs = await reads(addr, proxy, finished)
            wal = await wal_of_database(stats, pg0["lsn"], pg1["lsn"])
        finally:
            await stats.close()
            await asyncio.to_thread(stack.close)
            await proxy.stop()
    total_steps = runs * steps
    latencies = [run.seconds for run in finished]
    pg_delta = {key: pg1[key] - pg0[key] for key in pg0 if key != "lsn"}
    wire_delta = {key: wire1[key] - wire0[key] for key in wire0}
    return {
        "runs": runs,
        "steps_per_run": steps,
        "parallel_tools": 3,
        "concurrency": concurrency,
        "wall_s": round(wall, 2),
        "steps_per_s": round(total_steps / wall, 1),
        "p50_run_ms": round(percentile(latencies, 50) * 1000, 1),
        "p99_run_ms": round(percentile(latencies, 99) * 1000, 1),
        "per_step": {
            **per({k: float(v) for k, v in wire_delta.items()}, total_steps),
            "transactions": round(wal["commits"] / total_steps, 2),
            "rows_inserted": round(wal["rows_inserted"] / total_steps, 2),
            "rows_updated": round(wal["rows_updated"] / total_steps, 2),
            "rows_deleted": round(wal["rows_deleted"] / total_steps, 2),
            "database_growth_bytes": round(pg_delta["size"] / total_steps, 1),
            "wal_bytes": round(wal["bytes"] / total_steps, 1),
            "wal_full_page_image_bytes": round(wal["full_page_image_bytes"] / total_steps, 1),
            "wal_records": round(wal["records"] / total_steps, 2),
            "wal_bytes_whole_server": round(pg_delta["wal"] / total_steps, 1),
            "cpu_ms": {name: round(value * 1000 / total_steps, 3) for name, value in cpu.items()},
        },
        "per_read_of_a_finished_run": read_costs,
        "gateway_connections_opened": proxy.counts.connections,
    }


async def spread_load(addrs: list[str], runs: int, concurrency: int, steps: int) -> tuple[list[float], float]:
    """`runs` runs, `concurrency` at a time, dealt round-robin over the gateways at `addrs`."""
    channels = [grpc.aio.insecure_channel(addr) for addr in addrs]
    stubs = [agent_pb2_grpc.AgentStub(channel) for channel in channels]
    gate = asyncio.Semaphore(concurrency)

    async def bounded(i: int) -> float:
        async with gate:
            return (await one_run(stubs[i % len(stubs)], steps)).seconds

    try:
        started = time.perf_counter()
        latencies = await asyncio.gather(*(bounded(i) for i in range(runs)))
        return list(latencies), time.perf_counter() - started
    finally:
        for channel in channels:
            await channel.close()


async def gateway_scaling(url: str, counts: list[int], runs: int, concurrency: int, steps: int) -> Any:
    """Steps/s with 1, 2, 3… gateways on one Postgres (and one reasoner, one tool service)."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        env = _bench_env(url)
        ports = await _scripted_services(stack, Path(tmp), env, steps)
        gateways = [ports["gateway"]]
        argv = [
            sys.executable, "-m", "agentloop.cli", "serve", "gateway", "--port", "0",
            "--reasoner", f"127.0.0.1:{ports['reasoner']}", "--tools-addr", f"127.0.0.1:{ports['tools']}",
        ]  # fmt: skip
        for n in range(2, max(counts) + 1):
            child = await asyncio.to_thread(Child, f"gateway-{n}", argv, env)
            stack.callback(child.stop)
            gateways.append(child.port)
        for n in counts:
            addrs = [f"127.0.0.1:{port}" for port in gateways[:n]]
            await spread_load(addrs, 2 * n, 2 * n, steps)  # warm-up
            load_before = os.getloadavg()[0]
            latencies, wall = await spread_load(addrs, runs, concurrency, steps)
            out[f"{n}_gateways"] = {
                "steps_per_s": round(runs * steps / wall, 1),
                "p50_run_ms": round(percentile(latencies, 50) * 1000, 1),
                "p99_run_ms": round(percentile(latencies, 99) * 1000, 1),
                "load_average_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
            }
        await asyncio.to_thread(stack.close)
    return {"runs": runs, "concurrency": concurrency, "steps_per_run": steps, **out}


def model(base: dict[str, Any], stack: dict[str, Any]) -> dict[str, Any]:
    """Steps/s one primary and one gateway core sustain, from the measured costs."""
    step = stack["per_step"]
    write_tps = max(base["tps"]["simple_update_c8"], base["tps"]["simple_update_c32"])
    statements_per_s = write_tps * PGBENCH_N_STATEMENTS
    return {
        "primary_commit_bound_steps_per_s": round(write_tps / step["transactions"], 1),
        "primary_statement_bound_steps_per_s": round(statements_per_s / step["statements"], 1),
        "primary_steps_per_s": round(
            min(write_tps / step["transactions"], statements_per_s / step["statements"]), 1
        ),
        "gateway_core_steps_per_s": round(1000 / step["cpu_ms"]["gateway"], 1),
        "postgres_core_steps_per_s": round(1000 / step["cpu_ms"]["postgres_backends"], 1),
        "primary_get_thread_per_s": round(
            base["tps"]["select_only_c8"] / stack["per_read_of_a_finished_run"]["get_thread"]["statements"], 1
        ),
        "reasoner_core_steps_per_s": round(1000 / step["cpu_ms"]["reasoner"], 1),
        "tools_core_steps_per_s": round(1000 / step["cpu_ms"]["tools"], 1),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    async with bench_database() as url:
        database = make_url(url).database
        assert database is not None
        base = await asyncio.to_thread(baseline, database, args.pgbench_s, args.scale)
    async with bench_database() as url:
        stack = await measure_stack(url, args.steps, args.runs, args.concurrency)
    figures = {"pgbench": base, "stack": stack, "model": model(base, stack)}
    if args.gateways:
        counts = [int(n) for n in args.gateways.split(",")]
        async with bench_database() as url:
            figures["gateway_scaling"] = await gateway_scaling(
                url, counts, args.scaling_runs, args.scaling_concurrency, 5
            )
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--pgbench-s", type=int, default=10, help="seconds of each pgbench run")
    parser.add_argument("--scale", type=int, default=10, help="pgbench scale factor (100k rows each)")
    parser.add_argument("--gateways", default="1,2,3", help="gateway counts to compare ('' = skip)")
    parser.add_argument("--scaling-runs", type=int, default=400)
    parser.add_argument("--scaling-concurrency", type=int, default=200)
    parser.add_argument("--out", type=Path, default=RESULTS / "capacity.json")
    args = parser.parse_args(argv)
    figures = asyncio.run(run(args))
    publish(figures, args.out, workload={"model_latency_ms": 0, "store": "postgres"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
