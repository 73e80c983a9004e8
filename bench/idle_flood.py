"""Idle connections against a gateway: how many it holds, when it closes them, and whether runs go on.

Starts the services as processes (bench.load.running_services), connects a
real client and completes a run, then opens `--connections` TCP connections
to the gateway from `--workers` processes (a process may hold only as many
descriptors as `ulimit -n`), each from its own loopback address (127.0.0.2,
127.0.0.3, ...), so the kernel has ports enough and the client stays another
peer. Half of them send nothing at all; the other half open HTTP/2 as a
client does (preface, SETTINGS, acknowledging the server's SETTINGS and
answering its keepalive PINGs) and then never call. None carries
credentials. While they are held, the client that was already connected
runs back to back, and every `--fresh-every-s` a new client (a new
connection) connects and runs once. Both clients use agentloop's own channel options
(agentloop.kernel.channels: reconnect within a second), as AgentClient does.

Reports: connections accepted (the TCP connect succeeded), closed by the
gateway and when (at once: the connection cap; about the handshake timeout:
silent ones; about the idle timeout: HTTP/2 ones without a call), still open
when the flood ended; the client's run times (the connected one's, and each
fresh client's time to connect and finish a run); the gateway's descriptors
and memory at peak. Writes bench/results/idle-flood.json.

``--grpc-defaults`` starts the gateway with gRPC's own transport defaults (no
connection cap, a 120 s handshake timeout, no idle timeout), which is what the
services had before they bounded connections: the figure to compare with.

    python -m bench.idle_flood                       # 20,000 connections, 4 workers
    python -m bench.idle_flood --grpc-defaults --out bench/results/idle-flood-grpc-defaults.json
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import json
import multiprocessing
import os
import platform
import resource
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import grpc

from agentloop.kernel.channels import open_channel
from agentloop.kernel.settings import GATEWAY_LIMITS
from agentloop.scripted_model import Scenario, Script, Turn
from agentloop.v1 import agent_pb2, agent_pb2_grpc
from bench.load import running_services
from bench.workload import open_fds, percentile, rss_mib

RESULTS = Path(__file__).parent / "results"
HTTP2_OPENING = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
"""What an HTTP/2 client sends first: the connection preface, then an empty SETTINGS frame."""
CONNECTS_AT_ONCE = 512
"""Connection attempts one worker has in flight (the listen backlog holds a few thousand)."""
RUN_TIMEOUT_S = 60.0
FRESH_TIMEOUT_S = 30.0
"""A fresh client gives up on its connect and run after this long (an error in the report)."""
FRESH_CONNECTION = [("grpc.use_local_subchannel_pool", 1)]
GRPC_DEFAULTS = {
    "AGENTLOOP_MAX_CONNECTIONS": "0",
    "AGENTLOOP_HANDSHAKE_TIMEOUT_S": "120",
    "AGENTLOOP_CONNECTION_IDLE_S": "0",
    "AGENTLOOP_CONNECTION_AGE_S": "0",
    "AGENTLOOP_MAX_STREAMS_PER_CONNECTION": "0",
    "AGENTLOOP_MAX_CALLS": "0",
    "AGENTLOOP_MAX_CALLS_PER_PEER": "0",
}
"""The gateway as gRPC's transport defaults leave it (no bound of agentloop's own)."""


@dataclass
class Held:
    """One idle connection: when it was made and when the server closed it (time.time(), None: never)."""

    speaks_http2: bool
    connected_at: float | None = None
    closed_at: float | None = None
    error: str = ""

    @property
    def held_s(self) -> float | None:
        """How long the server kept it open, when it closed it."""
        if self.connected_at is None or self.closed_at is None:
            return None
        return self.closed_at - self.connected_at


async def hold_one(
    host: str,
    port: int,
    held: Held,
    release: asyncio.Event,
    source: str | None = None,
    gate: asyncio.Semaphore | None = None,
) -> Held:
    """Open one connection (from `source`; `gate` bounds the attempts in flight), open HTTP/2 if
    `held` speaks it, and hold it until the server closes it or `release` is set.

    `held` is filled in as things happen, so a caller can watch a flood in progress.
    """
    try:
        async with gate or contextlib.nullcontext():
            local = (source, 0) if source else None
            reader, writer = await asyncio.open_connection(host, port, local_addr=local)
    except OSError as exc:
        held.error = type(exc).__name__
        return held
    held.connected_at = time.time()
    try:
        if held.speaks_http2:
            writer.write(HTTP2_OPENING)
            read = asyncio.ensure_future(_idle_http2(reader, writer))
        else:
            read = asyncio.ensure_future(_until_closed(reader))
        released = asyncio.ensure_future(release.wait())
        await asyncio.wait({read, released}, return_when=asyncio.FIRST_COMPLETED)
        released.cancel()
        if read.done():
            held.closed_at = read.result()
        else:
            read.cancel()
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    return held


async def _until_closed(reader: asyncio.StreamReader) -> float:
    """Read (and drop) what the server sends until it closes the connection; when it did."""
    with contextlib.suppress(OSError):
        while await reader.read(65536):
            pass
    return time.time()


async def _idle_http2(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> float:
    """Behave as an idle HTTP/2 client until the server closes the connection; when it did.

    It acknowledges the server's SETTINGS and answers its PINGs, as every real
    client does (a connection that did not would be closed by gRPC's settings
    and keepalive timeouts), and never starts a stream.
    """
    with contextlib.suppress(OSError, asyncio.IncompleteReadError):
        while True:
            header = await reader.readexactly(9)
            length = int.from_bytes(header[:3], "big")
            kind, flags = header[3], header[4]
            payload = await reader.readexactly(length)
            if kind == _SETTINGS and not flags & _ACK:
                writer.write(_frame(_SETTINGS, _ACK, b""))
            elif kind == _PING and not flags & _ACK:
                writer.write(_frame(_PING, _ACK, payload))
    return time.time()


_SETTINGS, _PING, _ACK = 0x4, 0x6, 0x1


def _frame(kind: int, flags: int, payload: bytes) -> bytes:
    """An HTTP/2 frame on stream 0."""
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + b"\x00\x00\x00\x00" + payload


async def hold_many(
    host: str,
    port: int,
    count: int,
    release: asyncio.Event,
    source: str | None = None,
    into: list[Held] | None = None,
) -> list[Held]:
    """`count` idle connections, every other one speaking HTTP/2, each held like `hold_one`.

    `into` receives each connection's record before it is opened (to watch the flood).
    """
    gate = asyncio.Semaphore(CONNECTS_AT_ONCE)
    held = [Held(speaks_http2=i % 2 == 1) for i in range(count)]
    if into is not None:
        into.extend(held)
    await asyncio.gather(*(hold_one(host, port, h, release, source, gate) for h in held))
    return held


def _worker(host: str, port: int, count: int, source: str, hold_s: float) -> list[dict[str, Any]]:
    """A worker process: hold `count` connections from `source` for `hold_s` seconds."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    async def flood() -> list[Held]:
        release = asyncio.Event()
        asyncio.get_running_loop().call_later(hold_s, release.set)
        return await hold_many(host, port, count, release, source)

    return [asdict(h) for h in asyncio.run(flood())]


@dataclass
class ClientRuns:
    """What the real clients saw during the flood."""

    connected_runs_s: list[float] = field(default_factory=list)
    connected_errors: list[str] = field(default_factory=list)
    fresh_runs_s: list[float] = field(default_factory=list)
    fresh_errors: list[str] = field(default_factory=list)


async def one_run(stub: agent_pb2_grpc.AgentStub, timeout_s: float = RUN_TIMEOUT_S) -> float:
    """Invoke one run to its end; how long it took (raises what the call raised)."""
    started = time.perf_counter()
    reply = await stub.Invoke(agent_pb2.InvokeRequest(input="hello"), timeout=timeout_s, wait_for_ready=True)
    if not reply.final.final_reply:
        raise RuntimeError("the run ended without a reply")
    return time.perf_counter() - started


async def drive_clients(
    addr: str, stop: asyncio.Event, fresh_every_s: float, runs: ClientRuns, warm: asyncio.Event
) -> None:
    """The connected client runs back to back; a fresh client connects and runs every `fresh_every_s`.

    `warm` is set once the connected client has finished its first run (before any flood).
    """

    async def connected(stub: agent_pb2_grpc.AgentStub) -> None:
        while not stop.is_set():
            try:
                runs.connected_runs_s.append(await one_run(stub))
            except Exception as exc:
                runs.connected_errors.append(_kind(exc))
            await asyncio.sleep(0.2)

    async def fresh() -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), fresh_every_s)
            if stop.is_set():
                return
            # Its own subchannel pool: a new channel would otherwise share the connected client's
            # connection (gRPC pools subchannels process-wide) and never open one of its own.
            async with open_channel(addr, options=FRESH_CONNECTION) as channel:
                try:
                    stub = agent_pb2_grpc.AgentStub(channel)
                    runs.fresh_runs_s.append(await one_run(stub, FRESH_TIMEOUT_S))
                except Exception as exc:
                    runs.fresh_errors.append(_kind(exc))

    async with open_channel(addr) as channel:
        stub = agent_pb2_grpc.AgentStub(channel)
        await one_run(stub)  # connected, and the services warm, before the flood
        warm.set()
        await asyncio.gather(connected(stub), fresh())


def _kind(exc: Exception) -> str:
    if isinstance(exc, grpc.aio.AioRpcError):
        return f"{exc.code().name}: {(exc.details() or '')[:120]}"
    return f"{type(exc).__name__}: {exc}"[:160]


async def _sample(pid: int, stop: asyncio.Event, out: dict[str, list[float]]) -> None:
    """The gateway's descriptors and resident memory, once a second."""
    while not stop.is_set():
        with contextlib.suppress(OSError):
            out["fds"].append(open_fds(pid))
            out["rss_mib"].append(round(rss_mib(pid), 1))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 1.0)


async def measure(
    addr: str, gateway_pid: int, connections: int, workers: int, hold_s: float, fresh_every_s: float
) -> dict[str, Any]:
    """Flood `addr` for `hold_s` seconds while clients run; every figure of the report."""
    host, _, port = addr.rpartition(":")
    share = -(-connections // workers)
    sources = [f"127.0.0.{2 + i}" for i in range(workers)]
    runs = ClientRuns()
    stop = asyncio.Event()
    samples: dict[str, list[float]] = {"fds": [], "rss_mib": []}
    loop = asyncio.get_running_loop()
    warm = asyncio.Event()
    clients = asyncio.ensure_future(drive_clients(addr, stop, fresh_every_s, runs, warm))
    await asyncio.wait({clients, asyncio.ensure_future(warm.wait())}, return_when=asyncio.FIRST_COMPLETED)
    if clients.done():
        clients.result()  # the client could not even run before the flood: say why
    sampler = asyncio.ensure_future(_sample(gateway_pid, stop, samples))
    idle_fds, idle_rss = open_fds(gateway_pid), rss_mib(gateway_pid)
    flood_started = time.time()
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = [
            loop.run_in_executor(
                pool, _worker, host, int(port), min(share, connections - i * share), src, hold_s
            )
            for i, src in enumerate(sources)
        ]
        held = [Held(**h) for batch in await asyncio.gather(*futures) for h in batch]
    stop.set()
    await asyncio.gather(clients, sampler)
    return report(held, runs, flood_started, hold_s, samples, idle_fds, idle_rss)


def report(
    held: Sequence[Held],
    runs: ClientRuns,
    flood_started: float,
    hold_s: float,
    samples: dict[str, list[float]],
    idle_fds: int,
    idle_rss: float,
) -> dict[str, Any]:
    """The figures of one flood."""
    accepted = [h for h in held if h.connected_at is not None]
    closed = [h for h in accepted if h.closed_at is not None]

    def closing(group: Sequence[Held]) -> dict[str, Any]:
        times = sorted(h.held_s for h in group if h.held_s is not None)
        return {
            "accepted": len(group),
            "closed_by_gateway": len(times),
            "still_open_at_end": len(group) - len(times),
            "closed_within_1s": sum(1 for t in times if t < 1.0),
            "held_s": _spread(times),
        }

    connect_times = sorted(h.connected_at for h in accepted if h.connected_at is not None)
    return {
        "connections": len(held),
        "connect_failed": len(held) - len(accepted),
        "connect_errors": sorted({h.error for h in held if h.error}),
        "accepted": len(accepted),
        "closed_by_gateway": len(closed),
        "still_open_at_end": len(accepted) - len(closed),
        "opening_took_s": round(connect_times[-1] - flood_started, 2) if connect_times else None,
        "held_s": hold_s,
        "silent": closing([h for h in accepted if not h.speaks_http2]),
        "http2_no_call": closing([h for h in accepted if h.speaks_http2]),
        "client": {
            "connected_runs": len(runs.connected_runs_s),
            "connected_run_s": _spread(sorted(runs.connected_runs_s)),
            "connected_errors": runs.connected_errors[:20],
            "connected_error_count": len(runs.connected_errors),
            "fresh_clients": len(runs.fresh_runs_s) + len(runs.fresh_errors),
            "fresh_connect_and_run_s": _spread(sorted(runs.fresh_runs_s)),
            "fresh_errors": runs.fresh_errors[:20],
            "fresh_error_count": len(runs.fresh_errors),
        },
        "gateway": {
            "fds_idle": idle_fds,
            "fds_peak": int(max(samples["fds"], default=idle_fds)),
            "fd_limit": resource.getrlimit(resource.RLIMIT_NOFILE)[0],
            "rss_mib_idle": round(idle_rss, 1),
            "rss_mib_peak": max(samples["rss_mib"], default=idle_rss),
            "fds_each_second": [int(n) for n in samples["fds"]],
        },
    }


def _spread(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {
        "min": round(values[0], 3),
        "p50": round(percentile(values, 50), 3),
        "p99": round(percentile(values, 99), 3),
        "max": round(values[-1], 3),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Services up, one flood, services down; the report."""
    script = Script(scenarios=(Scenario(match="", turns=(Turn(content="hello back"),)),))
    extra = dict(GRPC_DEFAULTS) if args.grpc_defaults else {}
    with (
        tempfile.TemporaryDirectory() as tmp,
        running_services(script, f"sqlite+aiosqlite:///{tmp}/flood.db", extra) as (addr, pids),
    ):
        results = asyncio.run(
            measure(addr, pids["gateway"], args.connections, args.workers, args.hold_s, args.fresh_every_s)
        )
    return {
        "benchmark": "idle_flood",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "gateway_limits": "gRPC defaults" if args.grpc_defaults else asdict(GATEWAY_LIMITS),
        "workers": args.workers,
        "results": results,
    }


def summary(report_: dict[str, Any]) -> str:
    r = report_["results"]
    c = r["client"]
    return (
        f"{r['connections']} connections: {r['accepted']} accepted, {r['closed_by_gateway']} closed by the "
        f"gateway (silent: {r['silent']['held_s']}, HTTP/2 without a call: {r['http2_no_call']['held_s']}), "
        f"{r['still_open_at_end']} still open after {r['held_s']} s\n"
        f"connected client: {c['connected_runs']} runs {c['connected_run_s']}, {c['connected_error_count']} "
        f"errors; fresh clients: {c['fresh_clients']}, connect+run {c['fresh_connect_and_run_s']}, "
        f"{c['fresh_error_count']} errors\n"
        f"gateway: fds {r['gateway']['fds_idle']} idle, {r['gateway']['fds_peak']} peak "
        f"(limit {r['gateway']['fd_limit']}); RSS {r['gateway']['rss_mib_idle']} → "
        f"{r['gateway']['rss_mib_peak']} MiB"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connections", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=4, help="processes holding the connections")
    parser.add_argument("--hold-s", type=float, default=45.0, help="how long the connections are held")
    parser.add_argument("--fresh-every-s", type=float, default=3.0, help="a new client connects this often")
    parser.add_argument("--grpc-defaults", action="store_true", help="the gateway without bounds of its own")
    parser.add_argument("--out", type=Path, default=RESULTS / "idle-flood.json")
    args = parser.parse_args(argv)
    if args.connections < 1 or not 1 <= args.workers <= 200:
        parser.error("--connections must be positive and --workers between 1 and 200")
    result = run(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(summary(result))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
