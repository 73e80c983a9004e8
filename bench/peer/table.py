"""The peer benchmark's tables: the ratio table (goal by goal) and the figures behind it.

Ratios are agentloop ÷ LangGraph, taken within one repetition of the matrix
(both systems measured back to back on the same machine state); with several
repetitions every cell shows the median over them, ratios included. Errors are
summed over the repetitions and shown next to every row they could distort.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

SYSTEMS = ("langgraph", "postgres", "sqlite")
Repeat = dict[str, Any]


def lg_figures(repeat: Repeat, label: str) -> dict[str, Any]:
    result: dict[str, Any] = repeat["configs"][label]["langgraph"]["langgraph"]
    return result


def al_figures(repeat: Repeat, label: str, backend: str) -> dict[str, Any]:
    result: dict[str, Any] = repeat["configs"][label]["agentloop"][backend]
    return result


def figures(repeat: Repeat, label: str, system: str) -> dict[str, Any]:
    return lg_figures(repeat, label) if system == "langgraph" else al_figures(repeat, label, system)


def overhead_per_step(repeat: Repeat, label: str, system: str) -> float:
    entry = repeat["configs"][label]
    p50: float = figures(repeat, label, system)["p50_ms"]
    ideal: float = entry["ideal_ms"]
    steps: int = entry["config"]["steps"]
    return (p50 - ideal) / steps


def cpu_per_step(repeat: Repeat, label: str, system: str) -> float:
    """CPU of the system's own processes per step: LangGraph's one process, agentloop's three services."""
    f = figures(repeat, label, system)
    value: float = f["client_cpu_ms_per_step"] if system == "langgraph" else f["cpu_ms_per_step_services"]
    return value


def growth_payload(repeat: Repeat, steps: int, system: str) -> float:
    growth = repeat["growth"]
    if system == "langgraph":
        point = next(p for p in growth["langgraph"]["points"] if p["steps"] == steps)
        lg: float = point["payload_bytes_per_run"]
        return lg
    al: float = growth["agentloop"][system][str(steps)]["storage"]["payload_bytes_per_run_total"]
    return al


@dataclass(frozen=True)
class Row:
    """One line of the ratio table: what is measured, where, and the goal it is held to."""

    title: str
    label: str
    unit: str
    value: Callable[[Repeat, str], float]
    goal: str
    met: Callable[[float, float], bool]  # (agentloop value, ratio to LangGraph) -> goal reached
    decimals: int = 1


def _metric(name: str, label: str) -> Callable[[Repeat, str], float]:
    def get(repeat: Repeat, system: str) -> float:
        value: float = figures(repeat, label, system)[name]
        return value

    return get


def _overhead(label: str) -> Callable[[Repeat, str], float]:
    return lambda repeat, system: overhead_per_step(repeat, label, system)


ROWS = (
    Row(
        "0 ms model & tools, 10×3, C=1: p50 per run",
        "zero-10x3-c1",
        "ms",
        _metric("p50_ms", "zero-10x3-c1"),
        "≤ ⅓ LG",
        lambda _v, r: r <= 1 / 3,
    ),
    Row(
        "0 ms, 10×3, C=50: runs/s",
        "zero-10x3-c50",
        "",
        _metric("runs_per_s", "zero-10x3-c50"),
        "≥ 3× LG",
        lambda _v, r: r >= 3,
    ),
    Row(
        "50 ms model / 20 ms tools, 5×3, C=1: overhead per step over the ideal",
        "lat-5x3-c1",
        "ms",
        _overhead("lat-5x3-c1"),
        "≤ 7 ms",
        lambda v, _r: v <= 7,
    ),
    Row(
        "50/20 ms, 5×3, C=50: runs/s",
        "lat-5x3-c50",
        "",
        _metric("runs_per_s", "lat-5x3-c50"),
        "≥ 3× LG",
        lambda _v, r: r >= 3,
    ),
    Row(
        "50/20 ms, 20×1, C=1: overhead per step",
        "lat-20x1-c1",
        "ms",
        _overhead("lat-20x1-c1"),
        "≤ 7 ms",
        lambda v, _r: v <= 7,
    ),
    Row(
        "50/20 ms, 50×1, C=1: overhead per step",
        "lat-50x1-c1",
        "ms",
        _overhead("lat-50x1-c1"),
        "≤ 7 ms",
        lambda v, _r: v <= 7,
    ),
    Row(
        "CPU per step, all processes (0 ms, 10×3, C=1)",
        "zero-10x3-c1",
        "ms",
        lambda repeat, system: cpu_per_step(repeat, "zero-10x3-c1", system),
        "≤ 4 ms in all",
        lambda v, _r: v <= 4,
    ),
    Row(
        "checkpoint data per run at K = 50",
        "growth",
        "kB",
        lambda repeat, system: growth_payload(repeat, 50, system) / 1000,
        "keep (≤ 1/50 LG)",
        lambda _v, r: r <= 1 / 50,
    ),
)


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _errors(repeats: list[Repeat], label: str, system: str) -> int:
    total = 0
    for repeat in repeats:
        if label == "growth":
            points = (
                repeat["growth"]["langgraph"]["points"]
                if system == "langgraph"
                else list(repeat["growth"]["agentloop"][system].values())
            )
            total += sum(int(p["errors"]) + int(p["invalid_results"]) for p in points)
        else:
            f = figures(repeat, label, system)
            total += int(f["errors"]) + int(f["invalid_results"])
    return total


def _breakdown(repeats: list[Repeat], system: str) -> str:
    by = [figures(r, "zero-10x3-c1", system)["cpu_ms_per_step_by_service"] for r in repeats]
    return ": " + ", ".join(f"{name} {_median([b[name] for b in by]):.1f}" for name in by[0])


def ratio_rows(repeats: list[Repeat]) -> list[dict[str, Any]]:
    """The ratio table as data: medians over the repetitions, errors summed."""
    rows = []
    for row in ROWS:
        cells: dict[str, Any] = {"workload": row.title, "goal": row.goal, "unit": row.unit}
        for system in SYSTEMS:
            cells[system] = _median([row.value(r, system) for r in repeats])
            cells[f"{system}_errors"] = _errors(repeats, row.label, system)
        for backend in SYSTEMS[1:]:
            ratios = [row.value(r, backend) / row.value(r, "langgraph") for r in repeats]
            cells[f"{backend}_ratio"] = _median(ratios)
            cells[f"{backend}_meets_goal"] = row.met(cells[backend], cells[f"{backend}_ratio"])
        if row.title.startswith("CPU"):
            cells["postgres_breakdown"] = _breakdown(repeats, "postgres")
            cells["sqlite_breakdown"] = _breakdown(repeats, "sqlite")
        rows.append(cells)
    return rows


def _ratio(ratio: float) -> str:
    """0.84× for ratios near one, 1/98 for the tiny ones (a storage ratio of 0.01× says too little)."""
    return f"{ratio:.2f}×" if ratio >= 0.1 or ratio <= 0 else f"1/{1 / ratio:,.0f}"


def _cell(value: float, unit: str, decimals: int) -> str:
    return f"{value:,.{decimals}f}{' ' + unit if unit else ''}"


def render_ratio_table(rows: list[dict[str, Any]]) -> str:
    """Markdown: LangGraph, agentloop Postgres and SQLite (ratio to LangGraph), goal, goal met, errors."""
    lines = [
        "| workload | LangGraph | agentloop Postgres | agentloop SQLite | goal | met (PG / SQLite) "
        "| errors LG / PG / SQLite |",
        "|---|---|---|---|---|---|---|",
    ]
    for cells in rows:
        unit = cells["unit"]
        lg = _cell(cells["langgraph"], unit, 1)
        pg, lite = (
            f"{_cell(cells[b], unit, 1)} ({_ratio(cells[f'{b}_ratio'])}){cells.get(f'{b}_breakdown', '')}"
            for b in SYSTEMS[1:]
        )
        met = " / ".join("yes" if cells[f"{b}_meets_goal"] else "no" for b in SYSTEMS[1:])
        errors = " / ".join(str(cells[f"{s}_errors"]) for s in SYSTEMS)
        lines.append(f"| {cells['workload']} | {lg} | {pg} | {lite} | {cells['goal']} | {met} | {errors} |")
    return "\n".join(lines)


def _fmt(value: Any, decimals: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{decimals}f}"
    return str(value)


def render_details(repeat: Repeat) -> str:
    """Every configuration of one repetition, system by system, with the figures behind the ratios."""
    header = (
        "| config | system | ideal ms | p50 | p95 | p99 | runs/s | ovh/step ms | CPU ms/step (r / t / g) "
        "| PG CPU ms/step | model CPU ms/step | model calls (expected) | table B/run | payload B/run "
        "| WAL B/run | errors+invalid |"
    )
    lines = [header, "|" + "---|" * 16]
    for label, entry in repeat["configs"].items():
        steps = entry["config"]["steps"]
        runs = entry["config"]["runs"]
        for system in SYSTEMS:
            f = figures(repeat, label, system)
            storage = f.get("storage") or {}
            pg_cpu = f.get("pg_cpu_s")
            calls = f["llm_server"]["requests"]
            inconsistent = f["llm_server"].get("inconsistent") or 0
            lines.append(
                "| "
                + " | ".join(
                    [
                        label,
                        system,
                        _fmt(entry["ideal_ms"]),
                        _fmt(f["p50_ms"]),
                        _fmt(f["p95_ms"]),
                        _fmt(f["p99_ms"]),
                        _fmt(f["runs_per_s"], 2),
                        _fmt(overhead_per_step(repeat, label, system), 2),
                        _cpu_cell(repeat, label, system),
                        _fmt(pg_cpu * 1000 / (runs * steps) if pg_cpu is not None else None, 2),
                        _fmt(float(f["llm_server"]["cpu_s"]) * 1000 / (runs * steps), 2),
                        f"{calls} ({f['llm_calls_expected']})"
                        + (f" {inconsistent} inconsistent" if inconsistent else ""),
                        _fmt(storage.get("table_bytes_per_run"), 0),
                        _fmt(storage.get("payload_bytes_per_run_total"), 0),
                        _fmt(storage.get("wal_bytes_per_run"), 0),
                        f"{f['errors']}+{f['invalid_results']}",
                    ]
                )
                + " |"
            )
        lines += _floor_lines(repeat, label)
    return "\n".join(lines)


def _cpu_cell(repeat: Repeat, label: str, system: str) -> str:
    """The system's CPU per step; for agentloop with reasoner / tools / gateway in brackets."""
    total = _fmt(cpu_per_step(repeat, label, system), 2)
    if system == "langgraph":
        return total
    by = figures(repeat, label, system)["cpu_ms_per_step_by_service"]
    return f"{total} ({' / '.join(_fmt(float(v), 1) for v in by.values())})"


FLOORS = (("floor", "LG's floor: bare openai loop"), ("floor_http", "LG's floor: bare HTTP loop"))


def _floor_lines(repeat: Repeat, label: str) -> list[str]:
    """The peer's framework-free floors: the same calls in a hand-written loop, no checkpoints."""
    entry = repeat["configs"][label]
    lines = []
    for key, name in FLOORS:
        floor = entry["langgraph"].get(key)
        if not floor:
            continue
        overhead = (floor["p50_ms"] - entry["ideal_ms"]) / entry["config"]["steps"]
        cells = [
            label,
            name,
            _fmt(entry["ideal_ms"]),
            *(_fmt(floor[k]) for k in ("p50_ms", "p95_ms", "p99_ms")),
        ]
        cells += [_fmt(floor["runs_per_s"], 2), _fmt(overhead, 2), _fmt(floor["client_cpu_ms_per_step"], 2)]
        cells += ["-"] * 6 + [f"{floor['errors']}+{floor['invalid_results']}"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def first_problems(repeats: list[Repeat]) -> list[str]:
    """The first error or invalid result of every configuration that had one, so none goes unseen."""
    out = []
    for i, repeat in enumerate(repeats):
        for label in repeat["configs"]:
            for system in SYSTEMS:
                f = figures(repeat, label, system)
                for key in ("first_error", "first_invalid"):
                    if f.get(key):
                        out.append(f"repeat {i + 1} {label} {system}: {f[key]}")
    return out
