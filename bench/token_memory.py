"""Gateway memory held per streamed token while a step runs.

A run's EventSink keeps its events for late followers (history) and for the
next checkpoint (the persist buffer). Keeping one RunEvent per token in both
cost about a kilobyte per token until the step ended (20 parallel
100k-token answers: gigabytes). The sink now joins consecutive tokens of a
step in both, while live subscribers still get every token.

Measured as resident memory (protobuf messages live outside Python's
allocator, so tracemalloc misses them): the RSS growth of a fresh process
after emitting N tokens into a sink whose one subscriber has consumed every
event (what a streaming client does), divided by N. `one_event_per_token`
keeps each token event in two lists, as the sink used to, for comparison.
Writes bench/results/token_memory.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from agentloop.v1 import agent_pb2
from bench.workload import publish
from gateway.journal.events import EventSink

RESULTS = Path(__file__).parent / "results"
TOKEN = "tok "


def _rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096


def _sink(tokens: int) -> EventSink:
    sink = EventSink("run", "thread")
    sink.reserved_upto(tokens + 10)  # as if the journal had reserved the numbers
    queue = sink.subscribe()
    for _ in range(tokens):
        sink.token(1, TOKEN)
        queue.get_nowait()  # the client reads it
    return sink


def _one_event_per_token(tokens: int) -> tuple[list[agent_pb2.RunEvent], list[agent_pb2.RunEvent]]:
    history: list[agent_pb2.RunEvent] = []
    pending: list[agent_pb2.RunEvent] = []
    for sequence in range(1, tokens + 1):
        event = agent_pb2.RunEvent(run_id="run", sequence=sequence, thread_id="thread")
        event.llm_token.token = TOKEN
        event.llm_token.step = 1
        history.append(event)
        pending.append(event)
    return history, pending


VARIANTS: dict[str, Callable[[int], object]] = {"sink": _sink, "one_event_per_token": _one_event_per_token}


def _measure(variant: str, tokens: int) -> float:
    """Bytes held per token by `variant`, measured in this (fresh) process."""
    VARIANTS[variant](1000)  # warm up imports and allocator pools
    before = _rss_bytes()
    keep = VARIANTS[variant](tokens)
    held = (_rss_bytes() - before) / tokens
    del keep
    return held


def _in_fresh_process(variant: str, tokens: int) -> float:
    argv = [sys.executable, "-m", "bench.token_memory", "--tokens", str(tokens), "--only", variant]
    return float(json.loads(subprocess.run(argv, check=True, capture_output=True, text=True).stdout))


async def main(tokens: int) -> None:
    results = {
        "tokens": tokens,
        "bytes_per_token": round(_in_fresh_process("sink", tokens), 1),
        "one_event_per_token_bytes_per_token": round(_in_fresh_process("one_event_per_token", tokens), 1),
        "history_events": len(_sink(tokens).history),
    }
    publish(results, RESULTS / "token_memory.json")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=200_000)
    parser.add_argument("--only", choices=sorted(VARIANTS), help="measure one variant, print bytes per token")
    args = parser.parse_args()
    if args.only:
        print(json.dumps(_measure(args.only, args.tokens)))
    else:
        asyncio.run(main(args.tokens))
