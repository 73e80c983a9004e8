"""Following a run's events: live from this process, else from the store, until its real end.

A run executing on another gateway is followed live over Postgres
LISTEN/NOTIFY when the store is Postgres (gateway.runs.live), else by polling the
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

from agentloop.v1 import agent_pb2
from gateway.journal.events import END_OF_RUN
from gateway.journal.release import is_terminal
from gateway.journal.run_journal import TRANSIENT
from gateway.runs.active import ActiveRun
from gateway.runs.live import Feed, LiveEvents, Lost
from gateway.store.base import RunStatus, Store

log = logging.getLogger(__name__)

_WATCH_POLL_S = 0.1
_STORE_PAGE = 1000
"""Events one store read returns at most (Store.events' default limit)."""
_LIVE_CHECK_S = 1.0
"""A live follower with nothing received for this long asks the store whether the run ended."""
_REPLAYS_WITHOUT_PROGRESS = 3
"""Replays in a row that leave a gap before the next live event; then the store is polled instead."""


class Followers:
    """Streams of run events for clients (Run, Resume, Watch)."""

    def __init__(
        self, store: Store, local: Callable[[str], ActiveRun | None], live: LiveEvents | None = None
    ) -> None:
        self._store = store
        self._local = local
        self._live = live

    def follow(self, active: ActiveRun, after_sequence: int = 0) -> AsyncIterator[agent_pb2.RunEvent]:
        """Events of a local run with sequence > after_sequence: stored, then replayed, then live.

        If the run stops here without a final or error event (its lease was
        lost to another gateway, or this gateway stops), the stream goes on
        from the store until the run really ends, as Watch does.
        """
        return self._follow_local(active, _Progress(after_sequence))

    async def _follow_local(self, active: ActiveRun, p: _Progress) -> AsyncIterator[agent_pb2.RunEvent]:
        queue = active.sink.subscribe()
        try:
            first_local = active.sink.first_sequence
            if p.last + 1 < first_local:
                async for event in self._read_stored(active.run_id, p, before=first_local):
                    yield event
            for event in list(active.sink.history):
                if event.sequence > p.last:
                    yield p.live(event)
            while (event := await queue.get()) is not END_OF_RUN:
                if event.sequence > p.last:
                    yield p.live(event)
        finally:
            active.sink.unsubscribe(queue)
        if not p.ended:
            async for event in self._continue(active.run_id, p):
                yield event

    def stored(self, run_id: str, last: int) -> AsyncIterator[agent_pb2.RunEvent]:
        """Events after `last` until the run has ended and all were read (or it runs here).

        With live events (Postgres), a run executing on another gateway is
        followed over its channel, as fast as its owner delivers; without
        them, or once live delivery fails, by polling the store.
        """
        return self._continue(run_id, _Progress(last))

    async def _continue(self, run_id: str, p: _Progress) -> AsyncIterator[agent_pb2.RunEvent]:
        if self._live is not None and self._live.listening and self._local(run_id) is None:
            feed = await self._live.follow(run_id)
            if feed is not None:
                try:
                    while True:
                        async for event in self._from_feed(feed, p):
                            yield event
                        if not p.new_owner:
                            break
                        p.new_owner = False  # ask the run's (new) owner to replay and publish
                finally:
                    await feed.close()
                if p.ended:
                    return
        async for event in self._polled(run_id, p):
            yield event

    async def _read_stored(
        self, run_id: str, p: _Progress, before: int | None = None
    ) -> AsyncIterator[agent_pb2.RunEvent]:
        """Stored events this stream has not sent (below `before` if given), text sent live cut off."""
        while True:
            events = await self._store.events(run_id, p.read_from)
            for event in events:
                if before is not None and event.sequence >= before:
                    return
                if (out := p.stored(event)) is not None:
                    yield out
            if len(events) < _STORE_PAGE:
                return

    async def _from_feed(self, feed: Feed, p: _Progress) -> AsyncIterator[agent_pb2.RunEvent]:
        """Stored events, the owner's not yet stored ones, then live ones; returns to fall back."""
        run_id = feed.run_id
        try:
            async for event in self._read_stored(run_id, p):
                yield event
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
            if p.broken or p.new_owner:
                return
        async for event in self._live_events(feed, p):
            yield event

    async def _replayed(self, feed: Feed, owner: str, p: _Progress) -> AsyncIterator[agent_pb2.RunEvent]:
        """The owner's events it has not stored yet, so a follower misses none it emitted before listening.

        Sets p.broken when the owner cannot replay them: the stream then goes
        on by polling.
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
            if not self._in_order(p, event):
                return
            if event.sequence > p.last:
                yield p.live(event)

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
                if not self._in_order(p, item):
                    return
                yield p.live(item)
                if _ends_live_following(item):
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

    def _in_order(self, p: _Progress, event: agent_pb2.RunEvent) -> bool:
        """Whether a live event may be sent now; False sends the follower back to ask the owner again.

        One owner delivers its events one after the other, and this follower
        gets them live from its replay on. A gap before a live event means
        events it did not get: delivered by a new owner (a takeover) before it
        published, or dropped unseen by the owner. They may not be stored yet,
        so the store cannot fill the gap; the run's owner can, with a replay.
        """
        if event.sequence <= p.last + 1:
            return True
        p.replays_without_progress += 1
        if p.replays_without_progress > _REPLAYS_WITHOUT_PROGRESS:
            p.broken = True
        else:
            p.new_owner = True
        return False

    async def _polled(self, run_id: str, p: _Progress) -> AsyncIterator[agent_pb2.RunEvent]:
        """Stored events after p.last, polled until the run has ended and all were read (or it runs here)."""
        while True:
            active = self._local(run_id)
            if active is not None:
                async for event in self._follow_local(active, p):
                    yield event
                return
            try:
                async for event in self._read_stored(run_id, p):
                    yield event
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
    """Where a stream stands: the last sequence sent, and the token text sent live since another event.

    A stored token event joins consecutive tokens of a step under the last
    one's number (gateway.journal.events), up to TOKEN_COALESCE_BYTES each. A stream
    that sent some of them live and then reads the store (its live feed
    failed, the run moved) must not send their text again. It knows how much
    text of each kind it sent since its last other event (`base`): the store
    holds that same text, in the same order, in the token events after
    `base`. So it reads from `base` and cuts exactly that many characters
    from their front; only what was not sent goes out.
    """

    def __init__(self, last: int) -> None:
        self.last = last
        self.ended = False
        self.broken = False
        """Live following cannot go on (no replay from the owner, gaps it does not fill): poll."""
        self.owner = ""
        """The gateway this follower asked for a replay (it publishes the run's events since)."""
        self.new_owner = False
        """Ask the run's owner for a replay again (another gateway executes it now, or a gap)."""
        self.replays_without_progress = 0
        self.base = last
        """The stored events after this are tokens this stream sent live (`sent`), then unsent ones."""
        self._sent: dict[str, int] = {}
        """Characters of token text sent live after `base`, by kind (token, reasoning_token)."""

    @property
    def read_from(self) -> int:
        """Where reading the store must start so that no text sent live is skipped or repeated."""
        return self.base if self._sent else self.last

    def live(self, event: agent_pb2.RunEvent) -> agent_pb2.RunEvent:
        """`event` is being sent (from the owner: live, or its in-memory history)."""
        self.last = event.sequence
        self.replays_without_progress = 0
        self.ended = is_terminal(event)
        if event.WhichOneof("event") != "llm_token":
            self.base, self._sent = event.sequence, {}
            return event
        kind = event.llm_token.WhichOneof("content") or "token"
        self._sent[kind] = self._sent.get(kind, 0) + len(getattr(event.llm_token, kind))
        return event

    def stored(self, event: agent_pb2.RunEvent) -> agent_pb2.RunEvent | None:
        """What to send of a stored event read from `read_from` on: None when all of it was sent."""
        if event.WhichOneof("event") == "llm_token" and self._sent:
            token = event.llm_token
            kind = token.WhichOneof("content") or "token"
            text = getattr(token, kind)
            cut = min(self._sent.get(kind, 0), len(text))
            if cut:
                self._sent[kind] -= cut
                if not self._sent[kind]:
                    del self._sent[kind]
            if cut == len(text) or event.sequence <= self.last:
                self.base = event.sequence
                return None
            if cut:
                trimmed = agent_pb2.RunEvent()
                trimmed.CopyFrom(event)
                # LlmToken's text is a oneof: set only the field the event carries.
                setattr(trimmed.llm_token, kind, text[cut:])
                event = trimmed
        elif event.sequence <= self.last:
            self.base = max(self.base, event.sequence)
            return None
        self.last = event.sequence
        self.ended = is_terminal(event)
        if event.WhichOneof("event") != "llm_token":
            self.base, self._sent = event.sequence, {}  # text sent live but never stored is gone
        elif not self._sent:
            self.base = event.sequence
        return event
