"""The event loop every agentloop service runs on: uvloop where it is installed, else asyncio's own.

Each service spends most of its CPU per step in the event loop itself (waking
tasks, socket reads and writes for gRPC and Postgres): measured with the peer
benchmark at zero model latency, uvloop takes about a tenth off the three
services' CPU per step. Every library the services use (grpc.aio, asyncpg,
aiohttp, SQLAlchemy's asyncio layer) runs on it unchanged. Clients and tests
keep whatever loop they run; this is only for the processes `agentloop serve`
and the demo start. `AGENTLOOP_EVENT_LOOP=asyncio` opts out (to compare, or to
rule the loop out when chasing a problem).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from agentloop.kernel.settings import EVENT_LOOP, event_loop_choice

T = TypeVar("T")

ENV = EVENT_LOOP


def loop_factory(environ: dict[str, str] | None = None) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop constructor, or None for asyncio's default (not installed, or opted out)."""
    choice = event_loop_choice(environ)
    if choice == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:  # optional on platforms without it (Windows)
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)` on the services' event loop."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)
