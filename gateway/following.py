"""Following a run's events: live from this process, else from the store, until its real end.

A run executing on another gateway is followed live over Postgres
LISTEN/NOTIFY when the store is Postgres (gateway.live), else by polling the
store. A stream attached to a run here may see the run stop here without a final or
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
from gateway.events import END_OF_RUN, TOKEN_COALESCE_BYTES, is_terminal
from gateway.journal import TRANSIENT
from gateway.live import Feed, LiveEvents, Lost
from gateway.store.base import RunStatus, Store

if TYPE_CHECKING:
    from gateway.runs import ActiveRun

log = logging.getLogger(__name__)

_WATCH_POLL_S = 0.1
_LIVE_CHECK_S = 1.0
"""A live follower with nothing received for this long asks the store whether the run ended."""


class Followers:
    """Streams of run events for clients (Run, Resume, Watch)."""

    def __init__(
        self, store: Store, local: Callable[[str], ActiveRun | None], live: LiveEvents | None = None
    ) -> None:
        self._store = store
        self._local = local
        self._live = live

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
        """Events after `last` until the run has ended and all were read (or it runs here).

        With live events (Postgres), a run executing on another gateway is
        followed over its channel, as fast as its owner delivers; without
        them, or once live delivery fails, by polling the store.
        """
        progress = _Progress(last)
        if self._live is not None and self._live.listening and self._local(run_id) is None:
            feed = await self._live.follow(run_id)
            if feed is not None:
                try:
                    while True:
                        async for event in self._from_feed(feed, progress):
                            yield event
                        if not progress.new_owner:
                            break
                        progress.new_owner = False  # ask the run's new owner to replay and publish
                finally:
                    await feed.close()
                if progress.ended:
                    return
        async for event in self._polled(run_id, progress):
            yield event

    async def _from_feed(self, feed: Feed, p: _Progress) -> AsyncIterator[agent_pb2.RunEvent]:
        """Stored events, the owner's not yet stored ones, then live ones; returns to fall back."""
        run_id = feed.run_id
        try:
            while events := await self._store.events(run_id, p.last):
                for event in events:
                    yield p.stored(event)
            row = await self._store.get_run(run_id)
        except TRANSIENT:
            return
        if row is None or (row.status.ended and p.last >= row.last_sequence):
            p.ended = True
            return
        p.owner = (row.owner or "") if row.status == RunStatus.RUNNING else ""
        if p.owner and self._local(run_id) is None:
            async for event in self._replayed(feed, p.owner, p):
                yield event
            if p.broken:
                return
        async for event in self._live_events(feed, p):
            yield event

    async def _replayed(self, feed: Feed, owner: str, p: _Progress) -> AsyncIterator[agent_pb2.RunEvent]:
        """The owner's events it has not stored yet, so a follower misses none it emitted before listening.

        Sets p.broken when the owner cannot replay them or a gap cannot be
        filled from the store: the stream then goes on by polling.
        """
        replayed = await feed.replay(owner, p.last)
        if replayed is None:
            p.broken = True
            return
        snapshot, early = replayed
        for event in snapshot:  # the owner's history: tokens joined, so numbers skip
            if event.sequence > p.last:
                yield p.live(event)
        for event in early:
            async for caught_up in self._in_order(feed.run_id, p, event):
                yield caught_up
            if p.broken:
                return

    async def _live_events(self, feed: Feed, p: _Progress) -> AsyncIterator[agent_pb2.RunEvent]:
        """Live events while the run executes elsewhere; returns when the store must say what follows."""
        run_id = feed.run_id
        while self._local(run_id) is None:
            try:
                item = await asyncio.wait_for(feed.queue.get(), _LIVE_CHECK_S)
            except TimeoutError:
                if await self._may_have_ended(run_id, p):
                    return
                continue
            if isinstance(item, Lost):
                return
            if isinstance(item, agent_pb2.RunEvent) and item.sequence > p.last:
                async for caught_up in self._in_order(run_id, p, item):
                    yield caught_up
                if p.broken or _ends_live_following(item):
                    return

    async def _may_have_ended(self, run_id: str, p: _Progress) -> bool:
        """Nothing live for a while: the run may have ended (or paused) quietly, or the store may be down.

        Either way the live feed stops being the right source; polling the
        store takes over and finds the outcome. Or another gateway executes
        the run now (a takeover, a paused run resumed elsewhere): it publishes
        only once asked, so p.new_owner sends the follower back to ask it.
        """
        try:
            row = await self._store.get_run(run_id)
        except TRANSIENT:
            return True
        if row is None or row.status.ended:
            return True
        p.new_owner = row.status == RunStatus.RUNNING and bool(row.owner) and row.owner != p.owner
        return p.new_owner

    async def _in_order(
        self, run_id: str, p: _Progress, event: agent_pb2.RunEvent
    ) -> AsyncIterator[agent_pb2.RunEvent]:
        """A live event, after the stored ones its number skips (p.broken if the store cannot say).

        One owner's live events are numbered one after the other. A gap means
        events this stream did not get live: delivered before it listened, or
        by an owner killed after storing them and before publishing them (the
        gap then ends at the new owner's first event). The store has them if
        anyone does.
        """
        if event.sequence <= p.last:
            return
        if event.sequence > p.last + 1:
            try:
                gap = min(event.sequence - p.last - 1, 1000)
                missed = await self._store.events(run_id, p.last, limit=gap)
            except TRANSIENT:
                p.broken = True
                return
            for stored in missed:
                if stored.sequence < event.sequence:
                    yield p.stored(stored)
        yield p.live(event)

    async def _polled(self, run_id: str, p: _Progress) -> AsyncIterator[agent_pb2.RunEvent]:
        """Stored events after p.last, polled until the run has ended and all were read (or it runs here)."""
        while True:
            active = self._local(run_id)
            if active is not None:
                async for event in self.follow(active, p.last):
                    yield event
                return
            try:
                for event in await self._store.events(run_id, p.last):
                    yield p.stored(event)
                row = await self._store.get_run(run_id)
            except TRANSIENT:
                log.warning("run %s: store unavailable while following; retrying", run_id)
                await asyncio.sleep(_WATCH_POLL_S * 10)
                continue
            if row is None or (row.status.ended and p.last >= row.last_sequence):
                return
            await asyncio.sleep(_WATCH_POLL_S)


def _ends_live_following(event: agent_pb2.RunEvent) -> bool:
    """After a final, error or interrupt the store confirms the end (and holds anything after it)."""
    return is_terminal(event) or event.WhichOneof("event") == "interrupt"


class _Progress:
    """Where a stream stands: the last sequence sent, and the live tokens sent since another event.

    A stored token event joins consecutive tokens under the last one's number
    (gateway.events). A stream that sent some of them live and then reads the
    store (its live feed failed) gets the joined event whose number is above
    its last: the text it already sent is cut from its front, so no token
    text is sent twice.
    """

    _TAIL_BYTES = 2 * TOKEN_COALESCE_BYTES

    def __init__(self, last: int) -> None:
        self.last = last
        self.ended = False
        self.broken = False
        """Live following cannot go on (no replay from the owner, or a gap the store cannot fill): poll."""
        self.owner = ""
        """The gateway this follower asked for a replay (it publishes the run's events since)."""
        self.new_owner = False
        """Another gateway executes the run now: ask it for a replay (it then publishes)."""
        self._step = -1
        self._tail: list[tuple[str, str]] = []
        self._tail_bytes = 0

    def live(self, event: agent_pb2.RunEvent) -> agent_pb2.RunEvent:
        self.last = event.sequence
        self.ended = is_terminal(event)
        if event.WhichOneof("event") != "llm_token":
            self._tail, self._tail_bytes = [], 0
            return event
        token = event.llm_token
        if token.step != self._step:
            self._step, self._tail, self._tail_bytes = token.step, [], 0
        self._tail.append((token.token, token.reasoning_token))
        self._tail_bytes += len(token.token) + len(token.reasoning_token)
        while self._tail_bytes > self._TAIL_BYTES:
            first = self._tail.pop(0)
            self._tail_bytes -= len(first[0]) + len(first[1])
        return event

    def stored(self, event: agent_pb2.RunEvent) -> agent_pb2.RunEvent:
        self.last = event.sequence
        self.ended = is_terminal(event)
        tail, self._tail, self._tail_bytes = self._tail, [], 0
        if not tail or event.WhichOneof("event") != "llm_token" or event.llm_token.step != self._step:
            return event
        token = event.llm_token
        for i in range(len(tail)):  # the longest run of sent tokens the joined text starts with
            sent = "".join(t for t, _ in tail[i:])
            sent_reasoning = "".join(r for _, r in tail[i:])
            if token.token.startswith(sent) and token.reasoning_token.startswith(sent_reasoning):
                trimmed = agent_pb2.RunEvent()
                trimmed.CopyFrom(event)
                # LlmToken's text is a oneof: set only the field the event carries.
                if token.WhichOneof("content") == "reasoning_token":
                    trimmed.llm_token.reasoning_token = token.reasoning_token[len(sent_reasoning) :]
                else:
                    trimmed.llm_token.token = token.token[len(sent) :]
                return trimmed
        return event
