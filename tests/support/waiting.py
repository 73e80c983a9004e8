"""Polling assertions: wait for a condition instead of sleeping a fixed time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


async def assert_eventually(
    condition: Callable[[], bool], timeout_s: float = 5.0, interval_s: float = 0.02, message: str = ""
) -> None:
    """Fail unless `condition()` becomes true within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(message or f"condition not met within {timeout_s}s")
        await asyncio.sleep(interval_s)
