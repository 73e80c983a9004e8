"""Cross-gateway event latency: from the owner delivering an event to a Watch on another gateway.

Two gateways (each a whole in-process stack: scripted model, reasoner, tool
service, gateway, every hop a real socket) share one throwaway Postgres
database. Runs stream tokens on gateway A while clients Watch them through
gateway B, which learns of them over LISTEN/NOTIFY (gateway.runs.live).

Each event is stamped when A's EventSink delivers it (a subscriber queue that
records the clock as the event is put in it, i.e. at emission) and when the
Watch client of B receives it; both ends share one process and one monotonic
clock. Everything shares one event loop (and this machine's cores), so the
figures include that contention: they are an upper bound for separate
processes. Events emitted while a Watch attaches (it reads the store and asks
the owner for what it has not stored yet) are reported apart, as catch-up;
the target (p99 under 50 ms) is for events of a run a Watch already follows.
Writes bench/results/cross_gateway.json.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from agentloop.scripted_model import Latency, Scenario, Script, Turn
from agentloop.v1 import agent_pb2
from bench.pg import bench_database
from bench.workload import percentile, publish
from tests.support.stack import Stack, start_stack

RESULTS = Path(__file__).parent / "results"
TARGET_P99_MS = 50.0


class StampingQueue(asyncio.Queue[agent_pb2.RunEvent]):
    """A subscriber queue that notes when each event was handed to it (its emission)."""

    def __init__(self, stamps: dict[int, float]) -> None:
        super().__init__()
        self.stamps = stamps

    def put_nowait(self, item: agent_pb2.RunEvent) -> None:
        if item.sequence:
            self.stamps.setdefault(item.sequence, time.monotonic())
        super().put_nowait(item)


def script(tokens: int, per_token_ms: float) -> Script:
    words = " ".join(f"t{i}" for i in range(tokens))
    return Script(
        scenarios=(Scenario(match="", turns=(Turn(content=words),)),),
        latency=Latency(first_token_ms=200, per_token_ms=per_token_ms),
    )


@dataclass
class Samples:
    """Delays (ms) from emission on A to arrival at B's Watch client."""

    live: list[float] = field(default_factory=list)
    """Events emitted after the Watch had its first event: it follows the run live."""
    catch_up: list[float] = field(default_factory=list)
    """Events emitted while the Watch was attaching (store read, owner's replay, LISTEN)."""
    kinds: dict[str, int] = field(default_factory=dict)


async def one_run(a: Stack, b: Stack, samples: Samples) -> None:
    """Start a run on A, stamp its events there, Watch it through B; note each event's delay."""
    options = agent_pb2.RunOptions(stream_mode=agent_pb2.STREAM_MODE_ALL_STEPS)
    stream = a.agent.Run(agent_pb2.RunRequest(input="go", user_id="bench", options=options), timeout=120)
    first = await stream.read()
    run_id = first.event.run_id
    active = a.gateway.manager.local(run_id)
    assert active is not None, "the run is not executing on gateway A"
    stamps: dict[int, float] = {}
    # A private hook on purpose: stamping must happen inside the sink's synchronous fan-out.
    active.sink._subscribers.append(StampingQueue(stamps))

    async def drain_owner() -> None:
        while await stream.read() is not grpc.aio.EOF:
            pass

    owner = asyncio.create_task(drain_owner())
    watch = agent_pb2.WatchRequest(run_id=run_id, user_id="bench", after_sequence=first.event.sequence)
    attached: float | None = None
    async for response in b.agent.Watch(watch, timeout=120):
        arrived = time.monotonic()
        attached = arrived if attached is None else attached
        event = response.event
        emitted = stamps.get(event.sequence)
        # A final is delivered only once stored, on A as well: its wait is the checkpoint's, not B's.
        if emitted is None or event.WhichOneof("event") == "final":
            continue
        (samples.live if emitted > attached else samples.catch_up).append((arrived - emitted) * 1000)
        kind = event.WhichOneof("event") or ""
        samples.kinds[kind] = samples.kinds.get(kind, 0) + 1
    await owner


async def measure(concurrency: int, rounds: int, tokens: int, per_token_ms: float) -> dict[str, Any]:
    async with bench_database() as url:
        a = await start_stack(script(tokens, per_token_ms), database_url=url)
        b = await start_stack(script(tokens, per_token_ms), database_url=url)
        try:
            await one_run(a, b, Samples())  # warm-up: connections, LISTEN, first compile of statements
            samples = Samples()
            began = time.monotonic()
            for _ in range(rounds):
                await asyncio.gather(*(one_run(a, b, samples) for _ in range(concurrency)))
            elapsed = time.monotonic() - began
        finally:
            await b.close()
            await a.close()
    events = len(samples.live) + len(samples.catch_up)
    p99 = percentile(samples.live, 99)
    return {
        "events": events,
        "events_by_kind": samples.kinds,
        "events_per_s": round(events / elapsed, 1),
        "live_latency_ms": summary(samples.live),
        "catch_up_latency_ms": summary(samples.catch_up),
        "target_p99_ms": TARGET_P99_MS,
        "meets_target": p99 <= TARGET_P99_MS,
    }


def summary(values: list[float]) -> dict[str, float]:
    if not values:
        return {"count": 0}
    return {
        "count": len(values),
        "p50": round(percentile(values, 50), 2),
        "p90": round(percentile(values, 90), 2),
        "p99": round(percentile(values, 99), 2),
        "max": round(max(values), 2),
    }


POINTS = {
    "typical": (10, 100, 20.0),
    "fast_tokens": (4, 200, 5.0),
    "saturated": (10, 200, 5.0),
}
"""Load points: (runs streaming at once, tokens per run, ms per token). typical: 10 runs at 50 tokens/s
each; fast_tokens: 4 runs at 200 tokens/s; saturated: 2000 tokens/s through one process on 2 cores."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--points", nargs="*", choices=sorted(POINTS), default=list(POINTS))
    parser.add_argument("--out", type=Path, default=RESULTS / "cross_gateway.json")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    for name in args.points:
        concurrency, tokens, per_token_ms = POINTS[name]
        results[name] = {
            "concurrency": concurrency,
            "tokens_per_run": tokens,
            "per_token_ms": per_token_ms,
            **asyncio.run(measure(concurrency, args.rounds, tokens, per_token_ms)),
        }
    setup = {
        "gateways": 2,
        "database": "postgres (one throwaway database on 127.0.0.1)",
        "rounds": args.rounds,
        "clock": "emitted: the owner's EventSink fan-out; arrived: the Watch client of the other gateway",
        "process": "both gateways, their dependencies and the clients in one process and event loop",
    }
    publish(results, args.out, setup=setup)


if __name__ == "__main__":
    main()
