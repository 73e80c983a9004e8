"""Live run events and cancels across gateways that share a Postgres database.

The gateway executing a run (its owner) publishes the events it delivers on
the run's channel once somebody watches it; a Watch on any other gateway
LISTENs there and streams them as they come, tokens included. The store
stays the source of truth:

1. The watcher LISTENs first, then reads the stored events (the last
   checkpoint's), then asks the owner, on the owner's own channel, for what it
   delivered and has not stored yet (`replay`). The owner answers on the run
   channel between two markers, in line with its live events, so the watcher
   knows where its snapshot ends. That request is also what starts the
   owner's publishing: a run nobody watches from elsewhere (nearly all of
   them) costs no notification at all, where publishing every event would be
   one more Postgres round trip per event. A watcher that finds a new owner
   (a takeover, a paused run resumed elsewhere) asks that one again.
   Every watcher of the run channel hears every answer, but a snapshot is
   the owner's history (a step's tokens joined) and only means something to
   the watcher that asked, at the point where it asked: each feed drops the
   answers to requests that are not its own pending one (another watcher's,
   or its own that came too late and was asked again).
2. From then on it applies live events whose sequence is above the last one it
   sent. Numbers never repeat (gateway.journal.events reserves them), so that rule
   drops every duplicate; one owner's live events come one after the other,
   so a gap means the owner (a new one, after a takeover) delivered events
   this watcher did not get, and it asks that owner again.
3. If the listener connection is lost, or the owner could not publish some
   events, or an event is too big to travel live, or the owner does not
   answer a replay request in time, the watcher goes on by polling the store
   from its last sequence (gateway.runs.following).

A Cancel received by a gateway that does not execute the run reaches its owner
the same way, on the owner's channel, and the owner stops the run at once.

Payloads (text, each under gateway.store.notify.MAX_PAYLOAD):
``E<b64> <b64>...`` whole events; ``C<seq>/<i>/<n> <b64 part>`` one part of a
bigger event; ``P<seq>`` an event too big to travel live (read the store);
``R<nonce> <0|1>`` / ``Z<nonce>`` around a replay (1: the run executes there);
``X`` notifications were lost. Owner channel: ``cancel <run>``,
``replay <run> <after> <nonce>``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from google.protobuf.message import DecodeError

from agentloop.v1 import agent_pb2
from gateway.journal.events import END_OF_RUN, EventSink
from gateway.store.base import Store
from gateway.store.notify import MAX_PAYLOAD, PgNotifier, channel_name

log = logging.getLogger(__name__)

MAX_LIVE_EVENT_BYTES = 256 * 1024
"""Bigger events are announced, not sent: watchers read them from the store."""
REPLAY_TIMEOUT_S = 1.0
"""How long a watcher waits for the owner's answer before asking again (a busy owner answers late)."""
REPLAY_ATTEMPTS = 5
"""Requests a watcher sends (one at a time, each waited for longer) before it polls the store instead."""
_PART = MAX_PAYLOAD - 64
_MAX_PARTS = (MAX_LIVE_EVENT_BYTES * 4 // 3) // _PART + 2
_MAX_CONTROL = 512
MAX_BACKLOG = 10_000
"""Items a watcher may leave unread (a slow client); beyond, it goes on from the store instead."""


@dataclass(frozen=True)
class Replay:
    """Marks the start (`end` False) or end of an owner's replay for the request `nonce`."""

    nonce: str
    here: bool
    end: bool


class Lost:
    """Live delivery cannot be trusted any more: go on from the store."""


LOST = Lost()
Item = agent_pb2.RunEvent | Replay | Lost


def run_channel(run_id: str) -> str:
    return channel_name("run", run_id)


def owner_channel(instance_id: str) -> str:
    return channel_name("gw", instance_id)


def encode(events: Iterable[agent_pb2.RunEvent]) -> list[str]:
    """Payloads carrying `events` in order: packed while they fit, split when one alone does not."""
    out: list[str] = []
    packed: list[str] = []
    size = 1
    for event in events:
        data = event.SerializeToString()
        if len(data) > MAX_LIVE_EVENT_BYTES:
            out.extend(_flush(packed))
            out.append(f"P{event.sequence}")
            size = 1
            continue
        text = base64.b64encode(data).decode()
        if size + len(text) + 1 <= MAX_PAYLOAD:
            packed.append(text)
            size += len(text) + 1
            continue
        out.extend(_flush(packed))
        size = 1
        if len(text) + 2 <= MAX_PAYLOAD:
            packed.append(text)
            size += len(text) + 1
            continue
        parts = [text[i : i + _PART] for i in range(0, len(text), _PART)]
        out.extend(f"C{event.sequence}/{i}/{len(parts)} {part}" for i, part in enumerate(parts))
    out.extend(_flush(packed))
    return out


def _flush(packed: list[str]) -> list[str]:
    if not packed:
        return []
    payload = "E" + " ".join(packed)
    packed.clear()
    return [payload]


def _event(text: str) -> agent_pb2.RunEvent | None:
    try:
        return agent_pb2.RunEvent.FromString(base64.b64decode(text, validate=True))
    except (binascii.Error, DecodeError, ValueError):
        return None


class Decoder:
    """Payloads of one run channel back into items, parts reassembled (bounded)."""

    def __init__(self) -> None:
        self._parts: dict[int, list[str]] = {}

    def feed(self, payload: str) -> list[Item]:
        kind, body = payload[:1], payload[1:]
        if kind == "E":
            events = [_event(t) for t in body.split(" ")]
            if any(e is None for e in events):
                return [LOST]
            return [e for e in events if e is not None]
        if kind == "C":
            return self._part(body)
        if kind in ("R", "Z"):
            nonce, _, here = body.partition(" ")
            return [Replay(nonce, here == "1", kind == "Z")]
        # "P" (too big to travel live), "X" (lost) and anything unknown: read the store.
        return [LOST]

    def _part(self, body: str) -> list[Item]:
        head, _, part = body.partition(" ")
        try:
            seq, i, n = (int(x) for x in head.split("/"))
        except ValueError:
            return [LOST]
        if not 0 <= i < n <= _MAX_PARTS or (i > 0 and seq not in self._parts):
            return [LOST]
        parts = self._parts.setdefault(seq, [])
        if len(parts) != i:
            return [LOST]
        parts.append(part)
        if i + 1 < n:
            return []
        event = _event("".join(self._parts.pop(seq)))
        return [event if event is not None else LOST]


class Feed:
    """One watcher's view of a run channel: a queue of decoded items.

    The owner answers every watcher's replay request on the run channel, so
    every feed hears every answer. Only the answer to this feed's own pending
    request is queued; the others (another watcher's, or one this feed
    stopped waiting for) are dropped whole, between their markers: their
    snapshot joins a step's tokens from the start of the step, which would
    repeat text this watcher has already sent.
    """

    def __init__(self, live: LiveEvents, run_id: str) -> None:
        self.run_id = run_id
        self.channel = run_channel(run_id)
        self.queue: asyncio.Queue[Item] = asyncio.Queue()
        self._live = live
        self._decoder = Decoder()
        self._lost = False
        self._awaiting: str | None = None
        """The nonce of this feed's pending replay request."""
        self._skipping: str | None = None
        """The nonce of another request's answer being dropped (until its closing marker)."""

    def payload(self, payload: str) -> None:
        if self._lost:
            return
        kind = payload[:1]
        if kind == "X":
            self.lost()
            return
        if kind in ("R", "Z"):
            nonce = payload[1:].partition(" ")[0]
            if self._skipping is not None:
                if kind == "Z" and nonce == self._skipping:
                    self._skipping = None
                return
            if nonce != self._awaiting:
                self._skipping = nonce if kind == "R" else None
                return
        elif self._skipping is not None:
            return
        if self.queue.qsize() >= MAX_BACKLOG:
            self.lost()
            return
        for item in self._decoder.feed(payload):
            self.queue.put_nowait(item)

    def lost(self) -> None:
        """Nothing more is queued: the watcher reads the store from its last event."""
        if not self._lost:
            self._lost = True
            self.queue.put_nowait(LOST)

    async def replay(
        self, owner: str, after: int
    ) -> tuple[list[agent_pb2.RunEvent], list[agent_pb2.RunEvent]] | None:
        """(what the owner delivered after `after`, live events received meanwhile); None: go to the store.

        An owner that does not answer in time (busy, paused by its host) is
        asked again, up to REPLAY_ATTEMPTS times; its late answers to earlier
        requests are dropped. An owner that never answers (dead, or the
        request was lost) leaves the watcher to the store: going on with live
        events alone would skip what the owner delivered before them.
        """
        loop = asyncio.get_running_loop()
        early: list[agent_pb2.RunEvent] = []
        try:
            for attempt in range(REPLAY_ATTEMPTS):
                nonce = uuid.uuid4().hex[:12]
                self._awaiting = nonce
                self._live.send_control(owner, f"replay {self.run_id} {after} {nonce}")
                deadline = loop.time() + REPLAY_TIMEOUT_S * (attempt + 1)
                snapshot = await self._answer(nonce, deadline, early)
                if isinstance(snapshot, Lost):
                    return None
                if snapshot is not None:
                    return snapshot, early
            log.warning("run %s: owner %s did not answer a replay; reading the store", self.run_id, owner)
            return None
        finally:
            self._awaiting = None

    async def _answer(
        self, nonce: str, deadline: float, early: list[agent_pb2.RunEvent]
    ) -> list[agent_pb2.RunEvent] | Lost | None:
        """The snapshot answering `nonce`, or None if it did not come by `deadline` (live ones: `early`)."""
        loop = asyncio.get_running_loop()
        snapshot: list[agent_pb2.RunEvent] | None = None
        while True:
            try:
                item = await asyncio.wait_for(self.queue.get(), max(0.0, deadline - loop.time()))
            except TimeoutError:
                return None
            if isinstance(item, Lost):
                return item
            if isinstance(item, Replay):
                if item.nonce == nonce:
                    if not item.end:
                        snapshot = []
                    elif snapshot is not None:
                        return snapshot
                continue
            if snapshot is not None:
                snapshot.append(item)
            elif len(early) < MAX_BACKLOG:
                early.append(item)
            else:
                return LOST

    async def close(self) -> None:
        await self._live.unfollow(self)


class LiveEvents:
    """This gateway's end of the live channels: publishes its runs, follows others', relays cancels."""

    def __init__(
        self,
        dsn: str,
        instance_id: str,
        local_sink: Callable[[str], EventSink | None],
        on_cancel: Callable[[str], bool],
    ) -> None:
        self.instance_id = instance_id
        self._local_sink = local_sink
        self._on_cancel = on_cancel
        self._feeds: set[Feed] = set()
        self._notifier = PgNotifier(dsn, self._lost)
        self._pumps: set[asyncio.Task[None]] = set()
        self._published: set[str] = set()
        """Runs of this process whose events are being published (somebody asked for a replay)."""

    @classmethod
    def for_store(
        cls,
        store: Store,
        instance_id: str,
        local_sink: Callable[[str], EventSink | None],
        on_cancel: Callable[[str], bool],
    ) -> LiveEvents | None:
        """Live events for a Postgres-backed store; None otherwise (one process: in-process only)."""
        dsn = store.live_dsn
        return None if dsn is None else cls(dsn, instance_id, local_sink, on_cancel)

    @property
    def listening(self) -> bool:
        return self._notifier.listening

    async def start(self) -> None:
        """Connect and listen on this gateway's own channel (re-listened after every reconnect)."""
        await self._notifier.start()
        await self._notifier.listen(owner_channel(self.instance_id), self._control)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._notifier.ready.wait(), 5)

    async def close(self) -> None:
        for task in list(self._pumps):
            task.cancel()
        await asyncio.gather(*self._pumps, return_exceptions=True)
        await self._notifier.close()

    def _keep(self, task: asyncio.Task[None]) -> None:
        self._pumps.add(task)
        task.add_done_callback(self._pumps.discard)

    def _lost(self) -> None:
        for feed in list(self._feeds):
            feed.lost()

    # --- owner side ----------------------------------------------------------------
    def publish_run(self, run_id: str, sink: EventSink) -> None:
        """Publish every event `sink` delivers from now on, until the run stops here (once per run)."""
        if run_id in self._published:
            return
        self._published.add(run_id)
        queue = sink.subscribe()
        channel = run_channel(run_id)

        async def pump() -> None:
            try:
                ended = False
                while not ended:
                    batch = [await queue.get()]
                    while not queue.empty():
                        batch.append(queue.get_nowait())
                    ended = any(e is END_OF_RUN for e in batch)
                    events = [e for e in batch if e is not END_OF_RUN]
                    if events:
                        self._notifier.publish(channel, encode(events))
            finally:
                sink.unsubscribe(queue)
                self._published.discard(run_id)

        self._keep(asyncio.create_task(pump(), name=f"publish-{run_id}"))

    def send_control(self, instance_id: str, message: str) -> None:
        self._notifier.publish(owner_channel(instance_id), [message])

    def _control(self, payload: str) -> None:
        if len(payload) > _MAX_CONTROL:
            return
        words = payload.split(" ")
        if words[0] == "cancel" and len(words) == 2:
            self._on_cancel(words[1])
        elif words[0] == "replay" and len(words) == 4 and words[2].isdigit():
            self._replay(words[1], int(words[2]), words[3])

    def _replay(self, run_id: str, after: int, nonce: str) -> None:
        """Answer a watcher: what this process delivered for the run after `after`, between markers.

        Publishing starts here, before the snapshot is taken (no await between
        the two): an event delivered before is in the snapshot, one delivered
        after goes out live behind the closing marker.
        """
        sink = self._local_sink(run_id)
        if sink is not None:
            self.publish_run(run_id, sink)
        events = [e for e in sink.history if e.sequence > after] if sink is not None else []
        here = "1" if sink is not None else "0"
        payloads = [f"R{nonce} {here}", *encode(events), f"Z{nonce}"]
        self._notifier.publish(run_channel(run_id), payloads)

    # --- watcher side ----------------------------------------------------------------
    async def follow(self, run_id: str) -> Feed | None:
        """A feed of the run's channel, LISTENing once this returns; None if not listening now."""
        feed = Feed(self, run_id)
        if not await self._notifier.listen(feed.channel, feed.payload):
            await self._notifier.unlisten(feed.channel, feed.payload)
            return None
        self._feeds.add(feed)
        return feed

    async def unfollow(self, feed: Feed) -> None:
        self._feeds.discard(feed)
        await self._notifier.unlisten(feed.channel, feed.payload)

    def cancel(self, owner: str, run_id: str) -> None:
        """Tell the run's owner to stop it now (the store already says cancel_requested)."""
        self.send_control(owner, f"cancel {run_id}")


__all__ = ["LOST", "Feed", "LiveEvents", "Lost", "Replay", "encode"]
