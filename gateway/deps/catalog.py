"""The gateway's cached view of the ToolService registry.

Every run needs the tool specs to offer to the model; asking the ToolService
on every run would add an RPC per run, so specs are cached for a few seconds.
Readers never wait on a lock when the cache is fresh.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from agentloop.kernel.errors import InvalidArgument
from agentloop.v1 import common_pb2
from gateway.deps.clients import ToolsClient


class ToolCatalog:
    """Tool specs by name, refreshed from the ToolService after `ttl_s` seconds."""

    def __init__(self, client: ToolsClient, ttl_s: float, timeout_s: float = 10.0) -> None:
        self._client = client
        self._ttl_s = ttl_s
        self._timeout_s = timeout_s
        self._specs: dict[str, common_pb2.ToolSpec] = {}
        self._fetched_at = float("-inf")
        self._refresh_lock = asyncio.Lock()

    async def specs(self) -> dict[str, common_pb2.ToolSpec]:
        """All specs, fetched again when older than the TTL (one fetch at a time)."""
        if time.monotonic() - self._fetched_at < self._ttl_s:
            return self._specs
        async with self._refresh_lock:
            if time.monotonic() - self._fetched_at >= self._ttl_s:
                tools = await self._client.list_tools(self._timeout_s)
                self._specs = {t.name: t for t in tools}
                self._fetched_at = time.monotonic()
        return self._specs

    async def select(self, names: Sequence[str], field: str) -> list[common_pb2.ToolSpec]:
        """The specs a run offers: all of them, or exactly `names` (unknown names rejected)."""
        specs = await self.specs()
        if not names:
            return [specs[n] for n in sorted(specs)]
        chosen = []
        for i, name in enumerate(names):
            spec = specs.get(name)
            if spec is None:
                available = ", ".join(sorted(specs)) or "none"
                raise InvalidArgument(f"{field}[{i}]", f"unknown tool {name!r} (available: {available})")
            chosen.append(spec)
        return chosen
