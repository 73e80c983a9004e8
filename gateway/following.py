"""Following a run's events: live from this process, else from the store, until its real end.

A stream attached to a run here may see the run stop here without a final or
error event: its lease was lost to another gateway (this one froze), or this
gateway is stopping. Such a stream goes on from the store, with the new
owner's events, like Watch does for a run executing elsewhere; so every
stream ends with the run's real outcome (or the client's deadline).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from agentloop.v1 import agent_pb2
from gateway.events import END_OF_RUN, is_terminal
from gateway.journal import TRANSIENT
from gateway.store.base import Store

if TYPE_CHECKING:
    from gateway.runs import ActiveRun

log = logging.getLogger(__name__)

_WATCH_POLL_S = 0.1


class Followers:
    """Streams of run events for clients (Run, Resume, Watch)."""

    def __init__(self, store: Store, local: Callable[[str], ActiveRun | None]) -> None:
        self._store = store
        self._local = local

    async def follow(self, active: ActiveRun, after_sequence: int = 0) -> AsyncIterator[agent_pb2.RunEvent]:
        """Events of a local run with sequence > after_sequence: stored, then replayed, then live.

        If the run stops here without a final or error event (its lease was
        lost to another gateway, or this gateway stops), the stream goes on
        from the store until the run really ends, as Watch does.
        """
        queue = active.sink.subscribe()
        last, ended = after_sequence, False
        try:
            first_local = active.sink.first_sequence
            if last + 1 < first_local:
                for event in await self._store.events(active.run_id, last, limit=first_local - last - 1):
                    if event.sequence >= first_local:
                        break
                    last = event.sequence
                    yield event
            for event in list(active.sink.history):
                if event.sequence > last:
                    last, ended = event.sequence, is_terminal(event)
                    yield event
            while (event := await queue.get()) is not END_OF_RUN:
                if event.sequence > last:
                    last, ended = event.sequence, is_terminal(event)
                    yield event
        finally:
            active.sink.unsubscribe(queue)
        if not ended:
            async for event in self.stored(active.run_id, last):
                yield event

    async def stored(self, run_id: str, last: int) -> AsyncIterator[agent_pb2.RunEvent]:
        """Stored events after `last` until the run has ended and all were read (or it runs here)."""
        while True:
            active = self._local(run_id)
            if active is not None:
                async for event in self.follow(active, last):
                    yield event
                return
            try:
                for event in await self._store.events(run_id, last):
                    last = event.sequence
                    yield event
                row = await self._store.get_run(run_id)
            except TRANSIENT:
                log.warning("run %s: store unavailable while following; retrying", run_id)
                await asyncio.sleep(_WATCH_POLL_S * 10)
                continue
            if row is None or (row.status.ended and last >= row.last_sequence):
                return
            await asyncio.sleep(_WATCH_POLL_S)
