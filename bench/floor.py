"""The design's floor: what the hops of one step cost on this machine with no agentloop code in them.

A step of the loop is, whatever the gateway does around it, one gRPC call to
the Reasoner, one HTTP call from the Reasoner to the model, one server-stream
of the ToolService (a started and a finished event per tool call) and the
store's transactions (a checkpoint after the agent node, the round's tool
results, a checkpoint after the tools node). This measures each of those hops
bare, on the same runtime the services use (grpc.aio on uvloop, the openai SDK
on its aiohttp transport, aiosqlite), and adds them up for the two workloads
the hot-path targets are set on:

- the peer benchmark's zero-latency step (10 × 3, C = 1; target ≤ 4 ms of CPU
  per step across every process),
- the in-flight benchmark's run (3 tool steps of one call and a streamed
  50-token answer, FINAL_ONLY: every model call streams; target 1,000 runs of
  `bench.inflight`'s ideal 9.16 s in flight on this machine's cores).

Nothing here is agentloop: an echo gRPC server (a process of its own, as the
services are), the scripted model server (also its own process; its CPU is
not counted, as the model's is not in the targets), SQLite transactions of the
checkpoint's shape through aiosqlite in one thread hop (what the store's hot
path does). CPU is user + system time of the processes on each side of a hop,
per operation, over `--n` sequential operations after a warm-up: the floor a
step cannot go below without removing a hop, however lean the code around it.

Writes bench/results/floor.json and prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import aiosqlite
import grpc
import openai

from agentloop.kernel import eventloop
from agentloop.scripted_model import Scenario, Script, Turn
from bench.inflight import STEPS, Level, ideal_run_s
from bench.workload import bench_parser, cpu_seconds, publish

RESULTS = Path(__file__).parent / "results"
_SERVICE = "floor.Echo"
_STEP_PAYLOAD = 3_000
"""Bytes of a zero-latency 10 × 3 run's CompletionParams at its middle step (order of magnitude)."""
_EVENT_PAYLOAD = 120
_TARGET_CPU_MS_PER_STEP = 4.0
_INFLIGHT = Level()
"""bench.inflight's default level: 1,000 runs in flight, 2 s to a call's first token, 50 tokens/s."""
_ANSWER_TOKENS = _INFLIGHT.answer_tokens
_TOOL_STEP_CHUNKS = 4
"""Stream chunks of a one-call tool step from the scripted model: the call's name and 3 argument slices."""
_RUN_EVENTS_BESIDE_TOKENS = 28
"""The in-flight run's messages to its client beside tokens: 10 nodes' starts and ends, 3 tools',
the final event and the stream's first message."""


# --- the echo gRPC server (its own process) ------------------------------------------


def _handlers() -> grpc.GenericRpcHandler:
    async def unary(request: bytes, _context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        return request[:_EVENT_PAYLOAD]

    async def stream(
        request: bytes, _context: grpc.aio.ServicerContext[bytes, bytes]
    ) -> AsyncIterator[bytes]:
        count = int(request[:8])
        for _ in range(count):
            yield request[8 : 8 + _EVENT_PAYLOAD]

    return grpc.method_handlers_generic_handler(
        _SERVICE,
        {
            "Unary": grpc.unary_unary_rpc_method_handler(unary),
            "Stream": grpc.unary_stream_rpc_method_handler(stream),
        },
    )


async def _serve_echo() -> None:
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((_handlers(),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(port, flush=True)
    await server.wait_for_termination()


# --- measuring --------------------------------------------------------------------------


class _Peer:
    """A child process on the far side of a hop, whose CPU is counted with ours (or not)."""

    def __init__(self, argv: list[str], ready: Callable[[str], str | None]) -> None:
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            found = ready(line)
            if found is not None:
                self.address = found
                return
        raise RuntimeError(f"{argv[2]} did not start (exit code {self.proc.wait()})")

    def cpu_s(self) -> float:
        return cpu_seconds(self.proc.pid)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


async def _per_op(op: Callable[[], Awaitable[object]], n: int, peer: _Peer | None = None) -> dict[str, float]:
    """CPU per operation of this process and of `peer` (µs), and wall time per operation, after a warm-up."""
    for _ in range(max(20, n // 10)):
        await op()
    peer0 = peer.cpu_s() if peer else 0.0
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for _ in range(n):
        await op()
    cpu1, wall1 = time.process_time(), time.perf_counter()
    peer1 = peer.cpu_s() if peer else 0.0
    here = (cpu1 - cpu0) / n * 1e6
    there = (peer1 - peer0) / n * 1e6
    return {
        "caller_cpu_us": round(here, 1),
        "callee_cpu_us": round(there, 1),
        "cpu_us": round(here + there, 1),
        "wall_us": round((wall1 - wall0) / n * 1e6, 1),
    }


async def _grpc_hops(n: int) -> dict[str, Any]:
    """A unary call, and server-streams of 1, 7 and 51 messages: per call and per message."""
    peer = _Peer([sys.executable, "-m", "bench.floor", "--serve-echo"], lambda line: line.strip() or None)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{peer.address}") as channel:
            unary = channel.unary_unary(f"/{_SERVICE}/Unary")
            stream = channel.unary_stream(f"/{_SERVICE}/Stream")
            request = b"x" * _STEP_PAYLOAD

            def streamed(count: int) -> Callable[[], Awaitable[int]]:
                body = f"{count:08d}".encode() + b"e" * _EVENT_PAYLOAD

                async def op() -> int:
                    return len([m async for m in stream(body)])

                return op

            out: dict[str, Any] = {"unary": await _per_op(lambda: unary(request), n, peer)}
            for count in (1, 7, 51):
                out[f"stream_{count}"] = await _per_op(streamed(count), n, peer)
    finally:
        peer.stop()
    per_message = (out["stream_51"]["cpu_us"] - out["stream_1"]["cpu_us"]) / 50
    out["stream_per_message_cpu_us"] = round(per_message, 1)
    out["stream_per_call_cpu_us"] = round(out["stream_1"]["cpu_us"] - per_message, 1)
    return out


def _model_script(folder: Path) -> Path:
    answer = Turn(content=" ".join(f"w{i}" for i in range(_ANSWER_TOKENS)))
    script = Script(scenarios=(Scenario(match="", turns=(answer,)),))
    path = folder / "floor-script.json"
    path.write_text(json.dumps(script.to_dict()))
    return path


def _listening(line: str) -> str | None:
    found = re.search(r"listening on (\S+)", line)
    return found.group(1) if found else None


async def _http_hops(n: int) -> dict[str, Any]:
    """One chat completion: through the openai SDK (as the Reasoner makes it) and as a bare aiohttp POST."""
    with tempfile.TemporaryDirectory(prefix="floor.") as folder:
        argv = [sys.executable, "-m", "agentloop.scripted_model", "--port", "0", "--no-record"]
        model = _Peer([*argv, "--script", str(_model_script(Path(folder)))], _listening)
        try:
            base = model.address.rstrip("/")
            client = openai.AsyncOpenAI(
                base_url=base, api_key="floor", max_retries=0, http_client=openai.DefaultAioHttpClient()
            )
            messages: list[Any] = [{"role": "user", "content": "hello"}]

            body: dict[str, Any] = {"model": "m", "messages": messages}

            async def sdk() -> object:
                # As the Reasoner calls it: the SDK's request path, the reply left a dict (no models built).
                return await client.post("/chat/completions", body=body, cast_to=dict)

            async def sdk_stream() -> int:
                chunks = await client.post(
                    "/chat/completions",
                    body={**body, "stream": True},
                    cast_to=dict,
                    stream=True,
                    stream_cls=openai.AsyncStream[dict[str, Any]],
                )
                return len([c async for c in chunks])

            raw = json.dumps(body).encode()
            raw_stream = json.dumps({**body, "stream": True}).encode()
            headers = {"content-type": "application/json", "authorization": "Bearer floor"}
            async with aiohttp.ClientSession() as session:

                async def bare() -> object:
                    async with session.post(f"{base}/chat/completions", data=raw, headers=headers) as reply:
                        return json.loads(await reply.read())

                async def bare_stream() -> int:
                    url = f"{base}/chat/completions"
                    async with session.post(url, data=raw_stream, headers=headers) as reply:
                        return len(
                            [json.loads(line[6:]) async for line in reply.content if line[6:12] == b"{"]
                        )

                out: dict[str, Any] = {
                    "openai_sdk": await _per_op(sdk, n),
                    "openai_sdk_stream_50_tokens": await _per_op(sdk_stream, n),
                    "bare_aiohttp": await _per_op(bare, n),
                    "bare_aiohttp_stream_50_tokens": await _per_op(bare_stream, n),
                }
            await client.close()
        finally:
            model.stop()
    streamed = out["openai_sdk_stream_50_tokens"]["caller_cpu_us"] - out["openai_sdk"]["caller_cpu_us"]
    out["sdk_stream_per_chunk_cpu_us"] = round(streamed / _ANSWER_TOKENS, 1)
    parsed = out["bare_aiohttp_stream_50_tokens"]["caller_cpu_us"] - out["bare_aiohttp"]["caller_cpu_us"]
    out["bare_stream_per_chunk_cpu_us"] = round(parsed / _ANSWER_TOKENS, 1)
    return out


_SCHEMA = (
    "CREATE TABLE runs (id TEXT PRIMARY KEY, n INTEGER);"
    "CREATE TABLE messages (run_id TEXT, idx INTEGER, data BLOB, PRIMARY KEY (run_id, idx));"
    "CREATE TABLE checkpoints (run_id TEXT, idx INTEGER, data BLOB, PRIMARY KEY (run_id, idx));"
    "INSERT INTO runs VALUES ('r', 0);"
)


def _checkpoint(db: Any, messages: list[bytes], record: bytes) -> None:
    """A checkpoint's shape: bump the run, insert its new messages and one checkpoint row, one transaction."""
    db.execute("BEGIN IMMEDIATE")
    (n,) = db.execute("UPDATE runs SET n = n + 1 WHERE id = 'r' RETURNING n").fetchone()
    db.executemany(
        "INSERT INTO messages VALUES ('r', ?, ?)", [(n * 10 + i, m) for i, m in enumerate(messages)]
    )
    db.execute("INSERT INTO checkpoints VALUES ('r', ?, ?)", (n, record))
    db.execute("COMMIT")


async def _sqlite_hop(n: int) -> dict[str, Any]:
    """One checkpoint-shaped transaction, handed to aiosqlite's thread in one hop (the store's hot path)."""
    with tempfile.TemporaryDirectory(prefix="floor.") as folder:
        async with aiosqlite.connect(Path(folder) / "floor.db", isolation_level=None) as conn:
            await conn.execute("PRAGMA journal_mode=WAL")
            await conn.execute("PRAGMA synchronous=NORMAL")
            await conn.executescript(_SCHEMA)
            aio: Any = conn  # `_execute` and `_conn`: aiosqlite's hooks, as the store's hot path uses them
            raw = aio._conn  # the sqlite3 connection, used only on aiosqlite's thread
            messages, record = [b"m" * 300] * 3, b"c" * 200

            async def op() -> None:
                await aio._execute(_checkpoint, raw, messages, record)

            return {"checkpoint_transaction": await _per_op(op, n)}


# --- what they add up to -----------------------------------------------------------------


def _floors(hops: dict[str, Any], cores: int) -> dict[str, Any]:
    """The two workloads' floors from the hops measured (CPU, µs → ms)."""
    grpc_hops, http, store = hops["grpc"], hops["http"], hops["sqlite"]
    unary = grpc_hops["unary"]["cpu_us"]
    call, message = grpc_hops["stream_per_call_cpu_us"], grpc_hops["stream_per_message_cpu_us"]
    txn = store["checkpoint_transaction"]["cpu_us"]
    fanout = 3
    tools_round = call + 2 * fanout * message
    step_parts = {
        "reasoner_call_grpc": unary,
        "model_call_http_sdk": http["openai_sdk"]["caller_cpu_us"],
        "tools_round_grpc": tools_round,
        "store_three_transactions": 3 * txn,
    }
    step_ms = sum(step_parts.values()) / 1000
    bare_step_ms = (sum(step_parts.values()) - step_parts["model_call_http_sdk"]) / 1000 + (
        http["bare_aiohttp"]["caller_cpu_us"] / 1000
    )
    # The in-flight run: STEPS + 1 streamed model calls (tool steps of _TOOL_STEP_CHUNKS chunks, then the
    # answer), every chunk parsed by the SDK; the Reasoner relays text tokens and each call's result to
    # the gateway (tool-call deltas stay in the Reasoner); the answer's tokens and the run's other
    # events go gateway → client on one Run stream; STEPS tool rounds of one call; 3 transactions a
    # tool step and the final checkpoint.
    calls = STEPS + 1
    chunks = STEPS * _TOOL_STEP_CHUNKS + _ANSWER_TOKENS
    run_parts = {
        "model_calls_http_sdk_streamed": calls * http["openai_sdk"]["caller_cpu_us"]
        + chunks * http["sdk_stream_per_chunk_cpu_us"],
        "reasoner_streams_grpc": calls * call + (_ANSWER_TOKENS + calls) * message,
        "tools_rounds_grpc": STEPS * (call + 2 * message),
        "client_run_stream_grpc": call + (_ANSWER_TOKENS + _RUN_EVENTS_BESIDE_TOKENS) * message,
        "store_transactions": (3 * STEPS + 1) * txn,
    }
    run_ms = sum(run_parts.values()) / 1000
    bare_model_calls = (
        calls * http["bare_aiohttp"]["caller_cpu_us"] + chunks * http["bare_stream_per_chunk_cpu_us"]
    )
    bare_run_ms = run_ms + (bare_model_calls - run_parts["model_calls_http_sdk_streamed"]) / 1000
    ideal_s = ideal_run_s(_INFLIGHT.script())
    needed_runs_per_s = _INFLIGHT.concurrency / ideal_s
    budget_ms = cores * 1000 / needed_runs_per_s
    return {
        "zero_latency_step": {
            "parts_us": {k: round(v, 1) for k, v in step_parts.items()},
            "floor_cpu_ms": round(step_ms, 3),
            "floor_cpu_ms_bare_http": round(bare_step_ms, 3),
            "target_cpu_ms": _TARGET_CPU_MS_PER_STEP,
            "left_for_everything_else_ms": round(_TARGET_CPU_MS_PER_STEP - step_ms, 3),
        },
        "inflight_run": {
            "parts_us": {k: round(v, 1) for k, v in run_parts.items()},
            "floor_cpu_ms": round(run_ms, 3),
            "floor_cpu_ms_bare_http": round(bare_run_ms, 3),
            "target_in_flight": _INFLIGHT.concurrency,
            "ideal_run_s": round(ideal_s, 3),
            "runs_per_s_for_target": round(needed_runs_per_s, 1),
            "cpu_budget_ms_per_run_on_all_cores": round(budget_ms, 2),
            "cores": cores,
            "in_flight_at_floor": int(cores * 1000 / run_ms * ideal_s),
        },
    }


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    hops = {
        "grpc": await _grpc_hops(args.n),
        "http": await _http_hops(args.n),
        "sqlite": await _sqlite_hop(args.n),
    }
    return {"n": args.n, "hops": hops, "floors": _floors(hops, os.cpu_count() or 1)}


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--n", type=int, default=2000, help="operations per hop (after a warm-up)")
    parser.add_argument("--out", type=Path, default=RESULTS / "floor.json")
    parser.add_argument("--serve-echo", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_echo:
        eventloop.run(_serve_echo())
        return 0
    publish(eventloop.run(measure(args)), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
