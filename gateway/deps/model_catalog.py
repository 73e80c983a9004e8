"""The gateway's cached view of the models the Reasoner serves by name.

A run names its model (RunOptions.model); a name the Reasoner does not serve is refused when
the run is asked for, naming the field, rather than failing at its first model call. The names
come from Reasoner.ListModels and are cached for a few seconds (like the tool catalog), asked
for only when a run names a model: a run on the default model costs no extra call.
"""

from __future__ import annotations

import asyncio
import time

from agentloop.kernel.errors import InvalidArgument, Reason
from agentloop.v1 import reasoner_pb2
from gateway.deps.clients import ReasonerClient


class ModelCatalog:
    """Model names by the Reasoner, refreshed after `ttl_s` seconds."""

    def __init__(self, client: ReasonerClient, ttl_s: float, timeout_s: float = 10.0) -> None:
        self._client = client
        self._ttl_s = ttl_s
        self._timeout_s = timeout_s
        self._listing = reasoner_pb2.ListModelsResponse()
        self._fetched_at = float("-inf")
        self._refresh_lock = asyncio.Lock()

    async def listing(self) -> reasoner_pb2.ListModelsResponse:
        """What the Reasoner serves, fetched again when older than the TTL (one fetch at a time)."""
        if time.monotonic() - self._fetched_at < self._ttl_s:
            return self._listing
        async with self._refresh_lock:
            if time.monotonic() - self._fetched_at >= self._ttl_s:
                self._listing = await self._client.list_models(self._timeout_s)
                self._fetched_at = time.monotonic()
        return self._listing

    async def check(self, name: str, field: str) -> None:
        """INVALID_ARGUMENT naming `field` unless the Reasoner serves `name` ("" is its default)."""
        if not name:
            return
        listing = await self.listing()
        if listing.any_name or any(model.name == name for model in listing.models):
            return
        known = ", ".join(model.name for model in listing.models) or "none"
        raise InvalidArgument(field, f"unknown model {name!r} (known: {known})", reason=Reason.UNKNOWN_MODEL)
