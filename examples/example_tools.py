"""The tools the examples call, for the in-process stack and for a running one.

`--self-contained` registers them itself. A stack of your own serves them with
`agentloop dev --tools examples/example_tools.py --tools examples/caller_tools.py` (one
process) or `agentloop serve tools --tools examples/example_tools.py ...`.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter

from agentloop.tools import LoopPolicy, tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first.
        b: second.
    """
    return a + b


@tool
async def sleep_for(seconds: float) -> str:
    """Sleep, to make a tool slow.

    Args:
        seconds: how long.
    """
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@tool
async def track(label: str) -> str:
    """Take 50 ms, to show in which order calls start and end.

    Args:
        label: a name for the call.
    """
    await asyncio.sleep(0.05)
    return f"tracked {label}"


@tool
def leak() -> str:
    """Return a configuration blob that contains secrets."""
    return 'config: api_key="sk-live-0123456789abcdefghij" region=eu'


_polls: Counter[str] = Counter()


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: which key.
    """
    return f"value-for-{key}"


@tool(loop_policy=LoopPolicy(repeat_budget=3, volatile_result_fields=("checked_at",)))
def poll_job(job: str) -> str:
    """The state of a job. Polling repeats on purpose, so the tool declares a budget of 3 unchanged
    repeats, and its timestamp as volatile.

    Args:
        job: the job id ("nightly" finishes on its third poll, "stuck" never does).
    """
    _polls[job] += 1
    state = "done" if job == "nightly" and _polls[job] >= 3 else "running"
    return json.dumps({"job": job, "state": state, "checked_at": f"12:00:{_polls[job]:02d}"})
