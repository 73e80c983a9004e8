"""The scripted workload shared by the benchmarks: K steps × F parallel tool calls, zero latency."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from agentloop.scripted_model import Scenario, Script, ScriptedToolCall, Turn

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def bench_script(steps: int, fanout: int) -> Script:
    """A model that calls `fanout` cheap tools in parallel for `steps` rounds, then answers.

    Each round asks different sums, so the rounds are progress, not a loop the
    gateway's loop detection would stop.
    """
    turns = tuple(
        Turn(
            tool_calls=tuple(
                ScriptedToolCall("calculator", {"expression": f"{step * 100 + i} + 1"}) for i in range(fanout)
            )
        )
        for step in range(steps)
    )
    answer = Turn(content="Done: {{last_tool}}.")
    return Script(scenarios=(Scenario(match="", turns=(*turns, answer)),))


def write_script(script: Script, path: Path) -> Path:
    """Save a script where the scripted model process can read it."""
    path.write_text(json.dumps(script.to_dict()))
    return path


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def machine_cpu_seconds() -> float:
    """CPU time the whole machine has spent busy so far, all cores and all processes (Linux /proc)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / _CLOCK_TICKS


def rss_mib(pid: int) -> float:
    """Resident memory of a process in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def open_fds(pid: int) -> int:
    """File descriptors a process holds open (sockets included); 0 once it is gone."""
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def fd_soft_limit(pid: int) -> int | None:
    """The soft RLIMIT_NOFILE of a process (Linux /proc); None when unlimited or unreadable."""
    try:
        lines = Path(f"/proc/{pid}/limits").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("Max open files"):
            soft = line.split()[3]
            return int(soft) if soft.isdigit() else None
    return None


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[max(0, min(98, round(q) - 1))]


def publish(results: dict[str, Any], out: Path, **extra: Any) -> None:
    """Write a benchmark's report (with when and where it was measured) to `out` and print it."""
    report = {
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        **extra,
        "results": results,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    json.dump(report, sys.stdout, indent=2)
    print()


def bench_parser(doc: str | None) -> argparse.ArgumentParser:
    """A benchmark's flag parser, described by the first line of its module docstring."""
    return argparse.ArgumentParser(description=doc.splitlines()[0] if doc else "")


def measure_and_publish(
    parser: argparse.ArgumentParser,
    measure: Callable[[argparse.Namespace], Coroutine[Any, Any, dict[str, Any]]],
    default_out: Path,
    argv: list[str] | None,
) -> int:
    """Parse the flags (plus --out), run the measurement and publish its results; the exit status."""
    parser.add_argument("--out", type=Path, default=default_out)
    args = parser.parse_args(argv)
    publish(asyncio.run(measure(args)), args.out)
    return 0
