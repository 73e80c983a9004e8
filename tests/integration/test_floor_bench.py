"""The floor benchmark at a tiny scale, and the arithmetic that turns its hops into floors.

`python -m bench.floor` measures the bare hops of a step (an echo gRPC server
and the scripted model as processes, aiosqlite in this one); here with few
operations, so only that every hop is measured and the floors are the sums
they claim to be is asserted, never a speed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.floor import _floors, main

pytestmark = pytest.mark.integration


def _hops(
    unary: float, per_call: float, per_message: float, sdk: float, chunk: float, txn: float
) -> dict[str, Any]:
    return {
        "grpc": {
            "unary": {"cpu_us": unary},
            "stream_per_call_cpu_us": per_call,
            "stream_per_message_cpu_us": per_message,
        },
        "http": {
            "openai_sdk": {"caller_cpu_us": sdk},
            "bare_aiohttp": {"caller_cpu_us": sdk / 4},
            "sdk_stream_per_chunk_cpu_us": chunk,
            "bare_stream_per_chunk_cpu_us": chunk / 4,
        },
        "sqlite": {"checkpoint_transaction": {"cpu_us": txn}},
    }


def test_a_zero_latency_step_is_one_reasoner_call_one_model_call_one_tools_round_and_three_transactions() -> (
    None
):
    floors = _floors(_hops(unary=500, per_call=700, per_message=100, sdk=800, chunk=80, txn=100), cores=2)
    step = floors["zero_latency_step"]
    # 500 + 800 + (700 + 6 × 100) + 3 × 100 µs
    assert step["floor_cpu_ms"] == pytest.approx(2.9)
    assert step["floor_cpu_ms_bare_http"] == pytest.approx(2.9 - 0.8 + 0.2)
    assert step["left_for_everything_else_ms"] == pytest.approx(4.0 - 2.9)


def test_the_inflight_floor_counts_every_token_on_both_hops_and_says_how_many_runs_two_cores_carry() -> None:
    cheap = _floors(_hops(unary=500, per_call=700, per_message=0, sdk=800, chunk=0, txn=100), cores=2)
    dear = _floors(_hops(unary=500, per_call=700, per_message=100, sdk=800, chunk=0, txn=100), cores=2)
    run_cheap, run_dear = cheap["inflight_run"], dear["inflight_run"]
    # To the gateway 4 results + 50 tokens; 2 events a tool round; out 50 tokens + 28 events.
    messages = (4 + 50) + 3 * 2 + (50 + 28)
    assert run_dear["floor_cpu_ms"] - run_cheap["floor_cpu_ms"] == pytest.approx(messages * 0.1)
    assert run_dear["runs_per_s_for_target"] == pytest.approx(1000 / run_dear["ideal_run_s"], abs=0.1)
    assert run_dear["cpu_budget_ms_per_run_on_all_cores"] == pytest.approx(
        2000 / run_dear["runs_per_s_for_target"], abs=0.05
    )
    assert run_dear["in_flight_at_floor"] < run_cheap["in_flight_at_floor"]
    # Bare HTTP: 4 model calls at a quarter of the SDK's 800 µs.
    assert run_dear["floor_cpu_ms_bare_http"] == pytest.approx(run_dear["floor_cpu_ms"] - 4 * 0.6)


@pytest.mark.timeout(180)
def test_every_hop_is_measured_and_the_report_says_what_the_floors_leave(tmp_path: Path) -> None:
    out = tmp_path / "floor.json"
    assert main(["--n", "200", "--out", str(out)]) == 0
    results = json.loads(out.read_text())["results"]
    grpc_hops, http, store = (results["hops"][k] for k in ("grpc", "http", "sqlite"))
    for hop in (grpc_hops["unary"], grpc_hops["stream_1"], grpc_hops["stream_51"]):
        assert hop["caller_cpu_us"] > 0
    assert grpc_hops["stream_51"]["callee_cpu_us"] > 0  # the server's CPU, read in 10 ms ticks
    assert grpc_hops["stream_51"]["cpu_us"] > grpc_hops["stream_1"]["cpu_us"]
    assert http["openai_sdk_stream_50_tokens"]["caller_cpu_us"] > http["openai_sdk"]["caller_cpu_us"] > 0
    assert http["bare_aiohttp_stream_50_tokens"]["caller_cpu_us"] > http["bare_aiohttp"]["caller_cpu_us"] > 0
    assert store["checkpoint_transaction"]["cpu_us"] > 0
    step = results["floors"]["zero_latency_step"]
    assert step["floor_cpu_ms"] == pytest.approx(sum(step["parts_us"].values()) / 1000, abs=0.002)
    run = results["floors"]["inflight_run"]
    assert run["floor_cpu_ms"] == pytest.approx(sum(run["parts_us"].values()) / 1000, abs=0.002)
