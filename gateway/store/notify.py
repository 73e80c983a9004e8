"""Postgres LISTEN/NOTIFY for the gateways: one connection listens, another publishes.

Gateways sharing a database tell each other things at once through it: a run's
owner publishes the run's events, a Cancel reaches the owner. No other server
to run. Two dedicated asyncpg connections, outside the store's pool:

- The listener LISTENs to the channels somebody in this process follows. When
  it is lost (the server restarted, an admin terminated it) every follower is
  told at once, so it can go on from the store; the connection is re-made in
  the background for later followers.
- The publisher sends whatever was queued since its last round trip in one
  statement (`pg_notify` over `unnest`), so a burst of tokens from many runs
  costs one round trip, and notifications keep the order they were queued in.
  A batch that could not be sent is reported to its channels' followers as a
  reset (`RESET_PAYLOAD`) once the connection is back: they then read the store.

A NOTIFY payload must be shorter than 8000 bytes (`MAX_PAYLOAD`); framing
bigger messages is the caller's business (see gateway.runs.live).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import logging
from collections.abc import Callable
from typing import Any

import asyncpg
from sqlalchemy.engine import make_url

log = logging.getLogger(__name__)

MAX_PAYLOAD = 7900
"""Longest payload sent; Postgres refuses 8000 bytes and more."""
RESET_PAYLOAD = "X"
"""Sent on a channel after notifications for it were lost: its followers read the store instead."""
APPLICATION_NAME = "agentloop-live"
"""application_name of both connections (pg_stat_activity shows who they are)."""
_RECONNECT_S = (0.05, 2.0)

Callback = Callable[[str], None]


def channel_name(kind: str, key: str) -> str:
    """A channel for `key` (a run id, a gateway instance id): bounded, valid whatever `key` holds."""
    return f"agentloop_{kind}_{hashlib.sha256(key.encode()).hexdigest()[:32]}"


def asyncpg_dsn(url: str) -> str:
    """A libpq-style DSN asyncpg accepts, from the store's SQLAlchemy URL."""
    parsed = make_url(url).set(drivername="postgresql")
    return parsed.render_as_string(hide_password=False)


class PgNotifier:
    """Dedicated LISTEN and NOTIFY connections; callbacks get payloads, `on_lost` runs on disconnect."""

    def __init__(self, dsn: str, on_lost: Callable[[], None]) -> None:
        self._dsn = dsn
        self._on_lost = on_lost
        self._listener: asyncpg.Connection | None = None
        self._publisher: asyncpg.Connection | None = None
        self._callbacks: dict[str, set[Callback]] = {}
        self._queue: list[tuple[str, str]] = []
        self._wake = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False
        self._statements = asyncio.Lock()
        """One LISTEN/UNLISTEN at a time: a connection runs one statement at once."""
        self.ready = asyncio.Event()
        """Set while the listener connection is up."""

    @property
    def listening(self) -> bool:
        """True while the listener connection is up (followers can rely on live delivery)."""
        return self._listener is not None and not self._listener.is_closed()

    async def start(self) -> None:
        """Connect both connections (retrying in the background if the database is not there yet)."""
        self._spawn(self._flush_loop())
        self._spawn(self._listen_loop())

    async def close(self) -> None:
        """Stop: drop both connections and the background tasks."""
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for conn in (self._listener, self._publisher):
            if conn is not None:
                with contextlib.suppress(Exception):
                    await conn.close(timeout=1)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _connect(self) -> asyncpg.Connection:
        # A NOTIFY commits a transaction, which waits for its WAL flush by default: a
        # disk's fsync time on every event. Notifications are not durable anyway.
        settings = {"application_name": APPLICATION_NAME, "synchronous_commit": "off"}
        conn: asyncpg.Connection = await asyncpg.connect(self._dsn, server_settings=settings, timeout=5)
        return conn

    # --- listening ---------------------------------------------------------------
    async def _listen_loop(self) -> None:
        """Keep a listener connection; re-LISTEN what is followed after a reconnect."""
        delay = _RECONNECT_S[0]
        while not self._closed:
            if self.listening:
                await asyncio.sleep(0.2)
                continue
            conn: asyncpg.Connection | None = None
            try:
                conn = await self._connect()
                lost = asyncio.Event()
                conn.add_termination_listener(functools.partial(self._lost, lost))
                async with self._statements:
                    for channel in list(self._callbacks):
                        await conn.add_listener(channel, self._dispatch)
                self._listener = conn
                self.ready.set()
                delay = _RECONNECT_S[0]
                await lost.wait()
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as exc:
                self._listener = None
                if conn is not None:
                    conn.terminate()
                log.warning("live events: cannot listen (%s); retrying in %.2fs", exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, _RECONNECT_S[1])

    def _lost(self, lost: asyncio.Event, _conn: object) -> None:
        if self._closed:
            return
        log.warning("live events: listener connection lost; followers go on from the store")
        self._listener = None
        self.ready.clear()
        lost.set()
        self._on_lost()

    def _dispatch(self, _conn: object, _pid: int, channel: str, payload: object) -> None:
        for callback in list(self._callbacks.get(channel, ())):
            callback(str(payload))

    async def listen(self, channel: str, callback: Callback) -> bool:
        """Deliver `channel`'s payloads to `callback`, now and after reconnects.

        True if the channel is LISTENed to now; False if the listener is down
        (it will be once the connection is back).
        """
        callbacks = self._callbacks.setdefault(channel, set())
        first = not callbacks
        callbacks.add(callback)
        conn = self._listener
        if conn is None or conn.is_closed():
            return False
        if first:
            try:
                async with self._statements:
                    await conn.add_listener(channel, self._dispatch)
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
                return False
        return True

    async def unlisten(self, channel: str, callback: Callback) -> None:
        """Stop delivering `channel` to `callback` (UNLISTEN when nobody here follows it any more)."""
        if not self._forget(channel, callback):
            return
        conn = self._listener
        if conn is not None and not conn.is_closed():
            with contextlib.suppress(Exception):
                async with self._statements:
                    await conn.remove_listener(channel, self._dispatch)

    def _forget(self, channel: str, callback: Callback) -> bool:
        callbacks = self._callbacks.get(channel, set())
        callbacks.discard(callback)
        if callbacks:
            return False
        self._callbacks.pop(channel, None)
        return True

    # --- publishing --------------------------------------------------------------
    def publish(self, channel: str, payloads: list[str]) -> None:
        """Queue payloads for `channel` (each under MAX_PAYLOAD); sent in order, soon (once started)."""
        if not self._tasks or self._closed:
            return
        self._queue.extend((channel, p) for p in payloads)
        self._wake.set()

    async def _flush_loop(self) -> None:
        """Send everything queued in one statement per round trip; report lost batches as resets."""
        delay = _RECONNECT_S[0]
        lost_channels: set[str] = set()
        while not self._closed:
            await self._wake.wait()
            self._wake.clear()
            batch, self._queue = self._queue, []
            if lost_channels:
                batch = [(c, RESET_PAYLOAD) for c in sorted(lost_channels)] + batch
            if not batch:
                continue
            try:
                if self._publisher is None or self._publisher.is_closed():
                    self._publisher = await self._connect()
                await self._publisher.execute(
                    "SELECT pg_notify(c, p) FROM unnest($1::text[], $2::text[]) AS t(c, p)",
                    [c for c, _ in batch],
                    [p for _, p in batch],
                )
                lost_channels.clear()
                delay = _RECONNECT_S[0]
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as exc:
                log.warning("live events: publishing failed (%s); followers will read the store", exc)
                lost_channels.update(c for c, _ in batch)
                self._publisher = None
                await asyncio.sleep(delay)
                delay = min(delay * 2, _RECONNECT_S[1])
                self._wake.set()
