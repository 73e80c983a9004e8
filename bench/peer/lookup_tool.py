"""The peer benchmark's tool, identical to the one the LangGraph driver registers.

`lookup(key)` is async, sleeps PEER_BENCH_TOOL_MS milliseconds (default 0) and
returns ``value-for-<key>``: the same cost and the same bytes on both sides, so
the comparison measures the frameworks rather than the tools. Loaded into the
tool service with ``--tools bench.peer.lookup_tool`` (or AGENTLOOP_TOOL_MODULES).
"""

from __future__ import annotations

import asyncio
import os

from tool_svc.registry import tool

_DELAY_S = float(os.environ.get("PEER_BENCH_TOOL_MS", "0")) / 1000.0


@tool
async def lookup(key: str) -> str:
    """Look up the value stored under a key."""
    if _DELAY_S > 0:
        await asyncio.sleep(_DELAY_S)
    return f"value-for-{key}"
