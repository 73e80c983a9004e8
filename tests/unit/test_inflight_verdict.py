"""How the runs-in-flight benchmark judges a level and names why it failed, from the figures alone."""

from __future__ import annotations

from typing import Any

from bench.inflight import Level, diagnose, staggered, verdict


def figures(**changes: Any) -> dict[str, Any]:
    """A level that met every target on a quiet machine; `changes` replace top-level figures."""
    base: dict[str, Any] = {
        "errors": 0,
        "errors_by_kind": {},
        "ideal_run_ms": 9160.0,
        "added_per_step_ms": {"p50": 4.0, "p99": 20.0},
        "gateway_memory": {"per_run_kb": 60.0},
        "memory": {"flat": True},
        "cpu_percent": {"model": 10.0, "reasoner": 40.0, "tools": 5.0, "gateway": 50.0},
        "client_cpu_percent": [30.0],
        "machine_cpu_percent": {"cores": 2, "busy": 140.0, "other_processes": 5.0},
        "cpu_ms_per_run": {"model": 2.0, "reasoner": 8.0, "tools": 1.0, "gateway": 9.0},
        "in_flight_one_core_carries": {"model": 4580, "reasoner": 1145, "tools": 9160, "gateway": 1018},
        "fds": {
            name: {"idle": 30, "peak": 1100, "soft_limit": 20000}
            for name in ("model", "reasoner", "tools", "gateway")
        },
    }
    return base | changes


def test_a_level_within_every_target_passes() -> None:
    assert verdict(figures(), max_added_ms=50, max_kb=100) == []


def test_each_target_missed_is_named() -> None:
    failed = verdict(
        figures(
            errors=3,
            errors_by_kind={"rpc UNAVAILABLE": 3},
            added_per_step_ms={"p50": 30.0, "p99": 80.0},
            gateway_memory={"per_run_kb": 150.0},
            memory={"flat": False},
        ),
        max_added_ms=50,
        max_kb=100,
    )
    assert len(failed) == 4
    assert "3 errors" in failed[0]
    assert "80.0 ms > 50" in failed[1]
    assert "150.0 kB" in failed[2]
    assert "grew" in failed[3]


def test_a_level_without_a_single_completed_run_fails() -> None:
    assert verdict(figures(added_per_step_ms={"p50": None, "p99": None}), 50, 100)


def test_a_saturated_gateway_and_client_are_blamed_by_name() -> None:
    why = diagnose(
        figures(
            cpu_percent={"model": 10.0, "reasoner": 60.0, "tools": 5.0, "gateway": 97.0},
            client_cpu_percent=[92.0],
        ),
        Level(concurrency=1000),
    )
    assert any(reason.startswith("the gateway process is at 97.0 %") for reason in why), why
    assert any("client process 0" in reason and "--clients" in reason for reason in why), why
    assert not any("reasoner process" in reason for reason in why), why


def test_admission_cap_descriptors_pool_and_a_busy_machine_are_reasons() -> None:
    fds = figures()["fds"] | {
        "gateway": {"idle": 40, "peak": 19500, "soft_limit": 20000},
        "model": {"idle": 30, "peak": 1010, "soft_limit": 20000},
    }
    why = diagnose(
        figures(
            errors=5,
            errors_by_kind={"rpc RESOURCE_EXHAUSTED": 5},
            fds=fds,
            machine_cpu_percent={"cores": 2, "busy": 199.0, "other_processes": 80.0},
        ),
        Level(concurrency=2000),
    )
    text = "\n".join(why)
    assert "admits at most 1000 active runs" in text
    assert "5 runs were refused" in text
    assert "gateway holds 19500 descriptors" in text
    assert "openai client pool" in text
    assert "other processes on the machine used 80.0 %" in text


def test_the_process_with_the_least_headroom_per_core_is_named() -> None:
    why = diagnose(
        figures(
            cpu_ms_per_run={"model": 2.0, "reasoner": 8.0, "tools": 1.0, "gateway": 36.0},
            in_flight_one_core_carries={"model": 4580, "reasoner": 1145, "tools": 9160, "gateway": 254},
        ),
        Level(concurrency=1000),
    )
    assert any("gateway keep only ~254 runs" in reason for reason in why), why


def test_runs_start_spread_over_one_run_and_evenly_over_client_processes() -> None:
    assert staggered(4, 2, 8.0) == [[0.0, 4.0], [2.0, 6.0]]
    assert staggered(2, 5, 1.0) == [[0.0], [0.5]]
    offsets = staggered(1000, 3, 9.16)
    assert [len(part) for part in offsets] == [334, 333, 333]
    assert max(max(part) for part in offsets) < 9.16
