"""LangGraph's side of the peer benchmark: the peer harness's own driver, run unchanged in its own venv.

`peer_langgraph.py bench` measures one configuration in a fresh process
(create_react_agent + AsyncPostgresSaver, plus, with `floor`, the same calls on
a bare openai client and as bare HTTP posts); `growth` measures checkpoint bytes
for several step counts. Each prints one JSON object, which is returned as is.
LangGraph is never imported here: it lives only in the harness's venv.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.peer.matrix import GROWTH_RUNS, GROWTH_STEPS, GROWTH_WARMUP, Config

_TIMEOUT_S = 3600


@dataclass(frozen=True)
class Peer:
    """Where the harness is and how to call it."""

    python: str
    folder: Path
    pg_dsn: str
    pg_pid: int
    tokens: int
    floor: bool

    def _run(self, args: list[str]) -> dict[str, Any]:
        argv = [self.python, str(self.folder / "peer_langgraph.py"), *args]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False)
        if done.returncode != 0:
            raise RuntimeError(
                f"peer_langgraph.py {args[0]} failed ({done.returncode}): {done.stderr[-2000:]}"
            )
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if not lines:
            raise RuntimeError(f"peer_langgraph.py {args[0]} printed no result: {done.stdout[-2000:]}")
        result: dict[str, Any] = json.loads(lines[-1])
        return result

    def _common(self, base_url: str, tool_ms: float, label: str) -> list[str]:
        return [
            *("--base-url", base_url, "--pg-dsn", self.pg_dsn, "--pg-pid", str(self.pg_pid)),
            *("--tool-ms", f"{tool_ms:g}", "--final-tokens", str(self.tokens), "--label", label),
        ]

    def bench(self, base_url: str, tool_ms: float, config: Config) -> dict[str, Any]:
        """One configuration, timed by the harness exactly as its run.sh does."""
        args = [
            "bench",
            *self._common(base_url, tool_ms, config.label),
            *("--steps", str(config.steps), "--fanout", str(config.fanout)),
            *("-C", str(config.concurrency), "-R", str(config.runs), "--warmup", str(config.warmup)),
        ]
        return self._run([*args, "--floor"] if self.floor else args)

    def growth(self, base_url: str) -> dict[str, Any]:
        """Checkpoint bytes per run at K = 5, 20, 50 (fanout 1, C = 1)."""
        return self._run(
            [
                "growth",
                *self._common(base_url, 0.0, "growth"),
                *("--steps-list", ",".join(str(k) for k in GROWTH_STEPS)),
                *("-R", str(GROWTH_RUNS), "--warmup", str(GROWTH_WARMUP)),
            ]
        )
