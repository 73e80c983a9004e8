"""`make bench-peer`: LangGraph and agentloop on the same fake model, Postgres cluster and matrix.

One throwaway Postgres cluster (initdb/pg_ctl, a free port) serves both
systems: LangGraph's AsyncPostgresSaver in the cluster's `postgres` database,
agentloop's gateway in a fresh database of its own; agentloop is also measured
on its embedded SQLite. Per phase the peer harness's fake model is started
once, then every configuration is measured for LangGraph (the harness's own
driver, in its own venv), agentloop on Postgres and agentloop on SQLite, back
to back, so the ratios of a configuration come from the same minute of the
machine. `--repeats N` runs the whole matrix N times (the order of the systems
rotates) and the table shows medians.

Prints the ratio table and the figures behind it; writes bench/results/peer.json
(a QUICK run writes bench/results/peer-quick.json, so it never replaces them).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import sys
import time
from pathlib import Path
from typing import Any

from bench.peer import table
from bench.peer.agentloop_side import Stack, agentloop_stack, measure
from bench.peer.langgraph_side import Peer
from bench.peer.matrix import GROWTH_RUNS, GROWTH_STEPS, GROWTH_WARMUP, Config, Phase, ideal_ms, phases
from bench.peer.processes import FakeModel, PostgresCluster
from bench.workload import bench_parser, publish

RESULTS = Path(__file__).resolve().parents[1] / "results"
BACKENDS = ("postgres", "sqlite")


def _log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


async def _config(
    peer: Peer,
    model: FakeModel,
    stacks: dict[str, Stack],
    phase: Phase,
    config: Config,
    order: list[str],
    tokens: int,
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "config": {
            **vars(config),
            "llm_ms": phase.llm_ms,
            "tool_ms": phase.tool_ms,
            "tokens_per_s": phase.tokens_per_s,
        },
        "ideal_ms": round(ideal_ms(model.config(), config.steps, phase.tool_ms, tokens), 3),
        "agentloop": {},
    }
    for system in order:
        _log(f"{config.label}: {system}")
        if system == "langgraph":
            entry["langgraph"] = await asyncio.to_thread(peer.bench, model.base_url, phase.tool_ms, config)
        else:
            entry["agentloop"][system] = await measure(stacks[system], model, config, tokens)
    return entry


async def _growth(peer: Peer, model: FakeModel, stacks: dict[str, Stack], tokens: int) -> dict[str, Any]:
    _log("growth: langgraph")
    out: dict[str, Any] = {"langgraph": await asyncio.to_thread(peer.growth, model.base_url), "agentloop": {}}
    for backend, stack in stacks.items():
        _log(f"growth: {backend}")
        points = {}
        for steps in GROWTH_STEPS:
            config = Config(f"growth-{steps}", steps, 1, 1, GROWTH_RUNS, GROWTH_WARMUP)
            points[str(steps)] = await measure(stack, model, config, tokens)
        out["agentloop"][backend] = points
    return out


async def _phase(
    args: argparse.Namespace,
    peer: Peer,
    cluster: PostgresCluster,
    phase: Phase,
    repeat: int,
    doc: dict[str, Any],
) -> list[tuple[str, str]]:
    """Measure a phase's configurations; the (configuration, backend) pairs run without loop detection."""
    model = FakeModel(args.peer_python, args.peer_dir, phase.llm_ms, phase.tokens_per_s, args.tokens)
    model.start()
    try:
        _log(
            f"phase {phase.name}: model {phase.llm_ms:g} ms, tools {phase.tool_ms:g} ms, "
            f"{phase.tokens_per_s:g} tokens/s"
        )
        async with contextlib.AsyncExitStack() as exits:
            stacks = {
                b: await exits.enter_async_context(agentloop_stack(b, model, phase.tool_ms, cluster))
                for b in BACKENDS
            }
            systems = ["langgraph", *BACKENDS]
            order = systems[repeat % 3 :] + systems[: repeat % 3]
            for config in phase.configs:
                doc["configs"][config.label] = await _config(
                    peer, model, stacks, phase, config, order, args.tokens
                )
            if phase.growth:
                doc["growth"] = await _growth(peer, model, stacks, args.tokens)
            return [(label, b) for b, stack in stacks.items() for label in stack.loop_detection_off]
    finally:
        model.stop()


def _where(pairs: list[tuple[str, str]]) -> str:
    """'a, b (postgres, sqlite)' when every configuration is on both backends, else each pair."""
    labels = list(dict.fromkeys(label for label, _ in pairs))
    if set(pairs) == {(label, b) for label in labels for b in BACKENDS}:
        return f"{', '.join(labels)} ({', '.join(BACKENDS)})"
    return ", ".join(f"{label} ({b})" for label, b in dict.fromkeys(pairs))


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """The whole matrix, `args.repeats` times, on one throwaway cluster."""
    cluster = PostgresCluster(pg_bin=args.pg_bin, os_user=args.pg_os_user)
    cluster.start()
    _log(f"throwaway Postgres on 127.0.0.1:{cluster.port} (postmaster pid {cluster.pid})")
    try:
        peer = Peer(args.peer_python, args.peer_dir, cluster.dsn, cluster.pid, args.tokens, args.floor)
        repeats: list[dict[str, Any]] = []
        loop_off: list[tuple[str, str]] = []
        started = time.monotonic()
        for repeat in range(args.repeats):
            doc: dict[str, Any] = {"configs": {}, "growth": {}}
            for phase in phases(args.quick, args.llm_ms, args.tool_ms, args.tokens_per_s):
                loop_off += await _phase(args, peer, cluster, phase, repeat, doc)
            repeats.append(doc)
        wall = time.monotonic() - started
    finally:
        cluster.stop()
    notes = []
    if loop_off:
        notes.append(
            "agentloop's default loop detection stopped warm-up runs of this workload (rounds lookup 0-i, "
            "1-i, … with results value-for-… look alike to it), so it was turned off per run "
            f"(RunOptions.loop_detection.disabled) in: {_where(loop_off)}"
        )
    notes.append(f"matrix wall time {wall:.0f} s, {args.repeats} repetition(s), QUICK={int(args.quick)}")
    notes.append(
        "Postgres: one throwaway cluster for both systems (initdb defaults: fsync, synchronous_commit on); "
        "LangGraph's PG CPU counts live backends only (its pool keeps them), agentloop's adds exited backends"
    )
    return {"repeats": repeats, "notes": notes}


def _parser() -> argparse.ArgumentParser:
    parser = bench_parser(__doc__)
    parser.add_argument(
        "--peer-dir", type=Path, required=True, help="the peer harness (fake_llm.py, peer_langgraph.py)"
    )
    parser.add_argument(
        "--peer-python", required=True, help="python of the venv holding the harness's requirements"
    )
    parser.add_argument("--quick", action="store_true", help="smoke run: runs and concurrency cut to a tenth")
    parser.add_argument("--repeats", type=int, default=1, help="run the matrix N times; cells show medians")
    parser.add_argument(
        "--no-floor", dest="floor", action="store_false", help="skip the peer's framework-free floors"
    )
    parser.add_argument("--llm-ms", type=float, default=50.0)
    parser.add_argument("--tool-ms", type=float, default=20.0)
    parser.add_argument("--tokens-per-s", type=float, default=1000.0)
    parser.add_argument("--tokens", type=int, default=50, help="final answer length")
    parser.add_argument("--pg-bin", default=None, help="folder holding initdb and pg_ctl (default: PATH)")
    parser.add_argument("--pg-os-user", default="postgres", help="user running Postgres when invoked as root")
    parser.add_argument("--out", type=Path, default=None)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not (args.peer_dir / "peer_langgraph.py").is_file():
        print(f"peer harness not found in {args.peer_dir} (set PEER_BENCH)", file=sys.stderr)
        return 2
    out = args.out or RESULTS / ("peer-quick.json" if args.quick else "peer.json")
    measured = asyncio.run(run(args))
    repeats = measured["repeats"]
    rows = table.ratio_rows(repeats)
    problems = table.first_problems(repeats)
    with contextlib.redirect_stdout(io.StringIO()):
        publish(
            {"ratio_table": rows, "repeats": repeats},
            out,
            benchmark="peer: LangGraph create_react_agent + AsyncPostgresSaver vs agentloop",
            quick=args.quick,
            notes=measured["notes"],
            problems=problems,
        )
    print(
        ("QUICK (smoke run, noisy): " if args.quick else "")
        + "agentloop vs LangGraph, ratios agentloop ÷ LangGraph"
    )
    print(table.render_ratio_table(rows))
    print()
    print(table.render_details(repeats[-1]))
    for line in measured["notes"] + problems:
        print(f"- {line}")
    print(f"results: {out}")
    errors = sum(row[f"{s}_errors"] for row in rows for s in table.SYSTEMS)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
