"""The runs-in-flight benchmark at a tiny scale: 20 runs in flight for 10 s against a fast-paced model.

The same code as `make bench-inflight` (bench/inflight.py): services as
processes, a separate client process, the gateway's memory idle and loaded.
Every run must end with its 3 steps, and the report must carry every figure
the full-scale run is read by; the latency and memory limits themselves are
not asserted, since this machine's neighbours decide them at this scale.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.inflight import STEPS, Level, ideal_run_s, main

pytestmark = pytest.mark.integration

TINY = Level(concurrency=20, seconds=10.0, first_token_ms=100.0, tokens_per_s=500.0, answer_tokens=20)


def test_the_ideal_run_is_every_model_call_streamed_end_to_end() -> None:
    # 3 tool steps of 4 pieces (name + 3 argument slices) and a 20-word answer, at 100 ms + 2 ms a piece.
    assert ideal_run_s(TINY.script()) == pytest.approx(3 * (0.100 + 3 * 0.002) + (0.100 + 19 * 0.002))


@pytest.mark.timeout(180)
def test_twenty_runs_in_flight_report_every_figure_and_no_error(tmp_path: Path) -> None:
    out = tmp_path / "inflight.json"
    main(
        [
            "--concurrency",
            str(TINY.concurrency),
            "--minutes",
            str(TINY.seconds / 60),
            "--first-token-ms",
            str(TINY.first_token_ms),
            "--tokens-per-s",
            str(TINY.tokens_per_s),
            "--answer-tokens",
            str(TINY.answer_tokens),
            "--out",
            str(out),
        ]
    )
    report = json.loads(out.read_text())
    assert report["scenario"]["steps"] == STEPS
    assert report["fd_limit"]["soft"] >= 1024
    assert report["event_loop"] in {"uvloop", "asyncio"}
    [level] = report["results"]["levels"]
    r = level["results"]
    assert r["errors"] == 0, r["errors_by_kind"]
    assert r["runs_completed"] >= TINY.concurrency, r
    # The model's pacing is a floor: a run can be slower than the ideal, never faster.
    assert r["ideal_run_ms"] == pytest.approx(1000 * ideal_run_s(TINY.script()), abs=0.1)
    assert 0 <= r["added_per_step_ms"]["p50"] <= r["added_per_step_ms"]["p99"]
    assert r["p50_run_ms"] >= r["ideal_run_ms"]
    memory = r["gateway_memory"]
    assert memory["in_flight"] == TINY.concurrency
    assert memory["idle_mib"] > 0
    assert memory["steady_mib"] > 0
    assert isinstance(memory["per_run_kb"], float)
    processes = {"model", "reasoner", "tools", "gateway"}
    assert set(r["cpu_percent"]) == processes
    assert len(r["client_cpu_percent"]) == 1
    assert r["client_cpu_percent"][0] > 0
    assert set(r["fds"]) == processes
    assert all(f["peak"] > 0 for f in r["fds"].values())
    series = r["memory"]["series_mib"]
    assert set(series) == processes
    assert all(len(v) >= 5 for v in series.values())
    assert "flat" in r["memory"]
    assert r["machine_cpu_percent"]["busy"] > 0
    assert set(r["in_flight_one_core_carries"]) == processes
    # A level that misses a limit says why; one that meets them has nothing to explain.
    assert bool(level["failed"]) == bool(level.get("why"))
