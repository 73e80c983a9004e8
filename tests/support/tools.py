"""Tools that make gateway behaviour observable: rendezvous, slowness, failure, counting."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from agentloop.kernel.settings import ToolSettings
from agentloop.scripted_model import Script
from agentloop.testing import Stack, running_stack
from tool_svc import Conversation, RunMetadata, ThreadId, ToolRegistry, UserId, tool
from tool_svc.builtins import default_registry


@dataclass
class Probe:
    """What the test tools saw; shared with the test that owns the registry."""

    barrier: asyncio.Barrier = field(default_factory=lambda: asyncio.Barrier(2))
    calls: Counter[str] = field(default_factory=Counter)
    cancelled: int = 0
    started: Counter[str] = field(default_factory=Counter)
    finished: Counter[str] = field(default_factory=Counter)
    active: int = 0
    max_active: int = 0
    order: list[str] = field(default_factory=list)


def make_registry(settings: ToolSettings | None = None) -> tuple[ToolRegistry, Probe]:
    """The built-in tools plus the test tools, with a fresh probe."""
    registry = default_registry(settings or ToolSettings())
    probe = Probe()

    @tool
    async def meet(party: str) -> str:
        """Wait for a second caller; returns only when two calls run at the same time.

        Args:
            party: who is arriving.
        """
        probe.calls["meet"] += 1
        await asyncio.wait_for(probe.barrier.wait(), 5)
        return f"{party} met"

    @tool
    async def sleep_for(seconds: float) -> str:
        """Sleep, to make a tool slow.

        Args:
            seconds: how long.
        """
        probe.calls["sleep_for"] += 1
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            probe.cancelled += 1
            raise
        return f"slept {seconds}"

    @tool
    def explode(reason: str) -> str:
        """Always fails.

        Args:
            reason: the error message.
        """
        probe.calls["explode"] += 1
        raise RuntimeError(reason)

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers.

        Args:
            a: first.
            b: second.
        """
        probe.calls["add"] += 1
        return a + b

    @tool
    async def count_once(key: str, seconds: float = 0.0) -> str:
        """Count how often each key starts and finishes (finished twice = work done twice).

        Args:
            key: what to count.
            seconds: how long the work takes.
        """
        probe.started[key] += 1
        if seconds:
            await asyncio.sleep(seconds)
        probe.finished[key] += 1
        return f"counted {key}"

    @tool
    async def track(label: str) -> str:
        """Record how many calls overlap and in which order they start.

        Args:
            label: a name for the call.
        """
        probe.order.append(label)
        probe.active += 1
        probe.max_active = max(probe.max_active, probe.active)
        try:
            await asyncio.sleep(0.05)
        finally:
            probe.active -= 1
        return f"tracked {label}"

    @tool
    def leak() -> str:
        """Return a configuration blob that contains secrets."""
        return 'config: api_key="sk-live-0123456789abcdefghij" region=eu'

    @tool
    def whoami(topic: str, history: Conversation, user: UserId, thread: ThreadId, meta: RunMetadata) -> str:
        """Say who asks, in which thread, and how long the conversation is (all injected by the gateway).

        Args:
            topic: what to talk about.
        """
        return json.dumps(
            {
                "topic": topic,
                "user": user,
                "thread": thread,
                "messages": len(history),
                "step": meta.get("step"),
            }
        )

    for fn in (meet, sleep_for, explode, add, count_once, track, leak, whoami):
        registry.register(fn)
    return registry, probe


@contextlib.asynccontextmanager
async def probed_stack(script: Script, **kwargs: Any) -> AsyncIterator[tuple[Stack, Probe]]:
    """A running stack whose tool service has the test tools, with their probe; start_stack's options."""
    registry, probe = make_registry()
    async with running_stack(script, registry=registry, **kwargs) as stack:
        yield stack, probe
