"""The peer benchmark's matrix: the same configurations, in the same order, for both systems.

Mirrors the peer harness's run.sh: a phase with realistic latencies (50 ms per
model call, 20 ms per tool, 1000 tokens/s), a phase at zero latency (pure
orchestration overhead), and checkpoint growth with the step count. QUICK cuts
runs and concurrency to a tenth, rounded up, as run.sh does.
"""

from __future__ import annotations

from dataclasses import dataclass

GROWTH_STEPS = (5, 20, 50)
GROWTH_RUNS = 2
GROWTH_WARMUP = 1


@dataclass(frozen=True)
class Config:
    """One measured configuration: K steps × F parallel tools, R runs at concurrency C."""

    label: str
    steps: int
    fanout: int
    concurrency: int
    runs: int
    warmup: int


@dataclass(frozen=True)
class Phase:
    """Configurations sharing one fake-model setting (the model is restarted between phases)."""

    name: str
    llm_ms: float
    tool_ms: float
    tokens_per_s: float
    configs: tuple[Config, ...]
    growth: bool = False


def _q(value: int, quick: bool) -> int:
    return (value + 9) // 10 if quick else value


def phases(
    quick: bool, llm_ms: float = 50.0, tool_ms: float = 20.0, tokens_per_s: float = 1000.0
) -> list[Phase]:
    """The README's matrix; warm-up runs (3, 5 at C=50, 1 for K ≥ 20) are never timed."""
    c50 = _q(50, quick)
    lat = Phase(
        "lat",
        llm_ms,
        tool_ms,
        tokens_per_s,
        (
            Config("lat-5x3-c1", 5, 3, 1, _q(20, quick), 3),
            Config("lat-5x3-c50", 5, 3, c50, _q(200, quick), 5),
            Config("lat-20x1-c1", 20, 1, 1, _q(5, quick), 1),
            Config("lat-50x1-c1", 50, 1, 1, _q(3, quick), 1),
        ),
    )
    zero = Phase(
        "zero",
        0.0,
        0.0,
        0.0,
        (
            Config("zero-10x3-c1", 10, 3, 1, _q(20, quick), 3),
            Config("zero-10x3-c50", 10, 3, c50, _q(200, quick), 5),
        ),
        growth=True,
    )
    return [lat, zero]


def ideal_ms(config: dict[str, float], steps: int, tool_ms: float, tokens: int) -> float:
    """K × (model + tool) + the final answer's latency and generation time: what no framework can beat."""
    tokens_per_s = config["tokens_per_s"]
    final = config["latency_ms"] + (tokens / tokens_per_s * 1000.0 if tokens_per_s > 0 else 0.0)
    return steps * (config["latency_ms"] + tool_ms) + final
