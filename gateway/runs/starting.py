"""Starting a new run: admission, its thread, its row, its first state; then the manager launches it.

Admission is counted before the first await, so a burst cannot slip past
max_active_runs, and a setup that fails or is cancelled (a client deadline,
a disconnect) ends the run it created instead of leaving it QUEUED or RUNNING
with nobody executing it. The rest of a run's life (resume, cancel, watch,
adoption) is `gateway.runs.manager.RunManager`, which holds one `RunStarter` and
gives it what it needs: the runs executing here (read only), how to launch a
prepared run and how to keep a task of the gateway's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
import uuid
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from agentloop.kernel.call_limits import current_caller
from agentloop.kernel.errors import Aborted, Reason, ResourceExhausted
from agentloop.kernel.retry import Backoff
from agentloop.kernel.settings import GatewaySettings
from agentloop.v1 import agent_pb2
from gateway.deps.catalog import ToolCatalog
from gateway.deps.model_catalog import ModelCatalog
from gateway.journal.convert import initial_state
from gateway.journal.events import RESERVE_BLOCK, EventSink
from gateway.journal.run_journal import with_store_retries
from gateway.loop.graph import START
from gateway.policies.context import calibration_of
from gateway.policies.hooks import HookRegistry
from gateway.runs.active import ActiveRun
from gateway.runs.admission import open_thread
from gateway.runs.options import RunLikeRequest, new_turn_messages, resolved_options, run_config
from gateway.runs.shares import RunShares
from gateway.store.base import RequestReplayed, RunRow, RunStatus, Store, ThreadBusy
from gateway.store.hotpath import run_to_completion

log = logging.getLogger(__name__)

QUEUE_POLL_S = 0.05
ABANDON_BACKOFF = Backoff(base_s=0.2, max_s=5.0, jitter=0.5)
"""Between attempts to end a run whose setup failed, once the store's retry budget is spent."""
REQUEST_THREADS = uuid.UUID("5d1b6f0e-3c1a-4f0e-9a57-6e2f1c7d8b40")
"""Namespace of the thread ids derived from request ids (uuid5)."""


def new_thread_id(request_id: str) -> str:
    """The id of a thread a request creates: random, or derived from its request_id.

    Derived, concurrent attempts of one request (a client retrying while its
    first attempt is still being set up) name the same thread, so a retry
    never leaves a second, empty thread behind; the database then lets one
    attempt create the run and the other attach to it.
    """
    return uuid.uuid5(REQUEST_THREADS, request_id).hex if request_id else uuid.uuid4().hex


Launch = Callable[..., ActiveRun]
"""Hands a prepared run to a task of its own (`RunManager._launch`)."""

InBackground = Callable[[Coroutine[Any, Any, None], str], None]
"""Runs a task of the gateway's own until it is done or the gateway stops."""


class RunStarter:
    """Starts new runs for one gateway: admission, the thread, the run row, the first state."""

    def __init__(
        self,
        settings: GatewaySettings,
        store: Store,
        catalog: ToolCatalog,
        models: ModelCatalog,
        hooks: HookRegistry,
        instance_id: str,
        active: Mapping[str, ActiveRun],
        launch: Launch,
        in_background: InBackground,
    ) -> None:
        self._settings = settings
        self._store = store
        self._catalog = catalog
        self._models = models
        self._hooks = hooks
        self._instance_id = instance_id
        self._active = active
        """The runs executing in this process (the manager's; read here, never changed)."""
        self._launch = launch
        self._in_background = in_background
        self._shares = RunShares(settings.run_share)
        """The run slots each caller holds (gateway.runs.shares), against GatewaySettings.run_share."""
        self._admitting = 0
        """begin() calls between admission and launch: counted against max_active_runs."""
        self.setting_up: set[str] = set()
        """Runs created by begin() and not launched yet (the manager renews their leases too)."""
        self._thread_freed: dict[str, asyncio.Event] = {}

    def thread_freed(self, thread_id: str) -> None:
        """A run of the thread ended here: an ENQUEUEd run waiting for the thread may start now."""
        freed = self._thread_freed.pop(thread_id, None)
        if freed is not None:
            freed.set()

    async def begin(self, request: RunLikeRequest, *, streaming: bool, deadline: float | None) -> ActiveRun:
        """Validate, create (or continue) the thread, queue the run, start it when the thread is free.

        Admission counts the run before the first await, so a burst cannot
        slip past max_active_runs, nor past the caller's share of them
        (gateway.runs.shares): one caller flooding runs leaves the other slots to
        the others. A setup that fails or is cancelled (client deadline,
        disconnect) ends the run it created instead of leaving it QUEUED or
        RUNNING with nobody executing it, and gives its slot back.

        A request whose request_id already started a run of the user raises
        RequestReplayed naming that run (checked first, and again by the
        database when the run is inserted, for concurrent retries).
        """
        if request.request_id:
            replayed = await self._store.run_by_request(request.user_id, request.request_id)
            if replayed is not None:
                raise RequestReplayed(replayed.run_id)
        busy = len(self._active) + self._admitting
        if busy >= self._settings.max_active_runs:
            raise ResourceExhausted(
                f"this gateway already runs {busy} runs (AGENTLOOP_MAX_ACTIVE_RUNS); retry later",
                reason=Reason.TOO_MANY_RUNS,
                retry_delay_s=1.0,
            )
        caller = current_caller()
        self._shares.take(caller)
        self._admitting += 1
        try:
            active = await self._begin(request, streaming=streaming, deadline=deadline)
        except BaseException:
            self._shares.give_back(caller)
            raise
        finally:
            self._admitting -= 1
        task = active.task
        assert task is not None, "_launch starts the run's task"
        task.add_done_callback(lambda _: self._shares.give_back(caller))
        return active

    async def _begin(self, request: RunLikeRequest, *, streaming: bool, deadline: float | None) -> ActiveRun:
        run_deadline = time.monotonic() + self._settings.max_run_s
        deadline = run_deadline if deadline is None else min(deadline, run_deadline)
        options = agent_pb2.RunOptions()
        options.CopyFrom(request.options)
        if not streaming:
            options.stream_mode = agent_pb2.STREAM_MODE_NONE
        config = run_config(options, self._settings, hooks=self._hooks)
        new_messages = new_turn_messages(request)
        specs = await self._catalog.select(config.tool_names, "options.tools")
        await self._models.check(config.model, "options.model")
        thread_id = request.thread_id or new_thread_id(request.request_id)
        fresh_id = not request.thread_id and not request.request_id
        opened = await open_thread(self._store, request, thread_id, fresh_id=fresh_id)
        stored = agent_pb2.RunRequest(
            input=request.input,
            user_id=request.user_id,
            thread_id=thread_id,
            history=request.history,
            options=resolved_options(options, config),
            request_id=request.request_id,
        )
        run_id = uuid.uuid4().hex
        self.setting_up.add(run_id)
        try:
            started = await self._create_run(run_id, stored)
            history = (
                []
                if opened.created
                else await self._store.thread_messages(thread_id, user_id=request.user_id)
            )
            state = initial_state(run_id, thread_id, request.user_id, config, history)
            # This run's messages start at its question: a new thread's seed history is the client's.
            state.run_message_start += len(request.history)
            if opened.previous is not None:
                state.calibration = calibration_of(opened.previous.record)
            sink = EventSink(run_id, thread_id)
            sink.reserved_upto(started.sequence_reserved)
            return self._launch(state, sink, specs, new_messages, START, deadline, recorded={})
        except BaseException:
            await run_to_completion(self._abandon(run_id))
            raise
        finally:
            self.setting_up.discard(run_id)

    async def _create_run(self, run_id: str, stored: agent_pb2.RunRequest) -> RunRow:
        """The run's row, RUNNING here; an ENQUEUEd run waits for its thread to be free first.

        Unless it may wait, the run is created already started: a refused one
        is never stored, so it never shows as the thread's latest run.
        """
        enqueue = stored.options.concurrency == agent_pb2.CONCURRENCY_POLICY_ENQUEUE
        try:
            started = await self._store.create_run(
                run_id,
                stored.thread_id,
                stored.user_id,
                stored.SerializeToString(),
                owner=None if enqueue else self._instance_id,
                request_id=stored.request_id or None,
                lease_s=self._settings.lease_s,
                reserve=RESERVE_BLOCK,
            )
        except ThreadBusy:
            raise Aborted(
                f"thread {stored.thread_id!r} already has an active run "
                "(options.concurrency=REJECT; use ENQUEUE to wait for it)",
                reason=Reason.THREAD_BUSY,
                metadata={"thread_id": stored.thread_id},
            ) from None
        return await self._start_when_free(run_id, stored.thread_id) if enqueue else started

    async def _abandon(self, run_id: str) -> None:
        """End a run whose setup did not finish: CANCELLED, owner cleared (it may not even exist).

        Retried like any run write for the store's retry budget; past it (a
        database busy or away for longer) a background task goes on trying
        until it succeeds or the gateway stops. A QUEUED run has no lease, so
        nothing else would ever end it.
        """
        if run_id in self._active:
            return  # launched after all: its task ends it
        try:
            await with_store_retries(
                lambda: self._cancel_unstarted(run_id),
                "cancel a run whose setup failed",
                self._settings.store_retry_budget_s,
            )
        except Exception as exc:
            log.warning(
                "run %s: could not end it after a failed setup (%s); retrying in the background", run_id, exc
            )
            self._in_background(self._abandon_later(run_id), f"abandon-{run_id}")

    async def _cancel_unstarted(self, run_id: str) -> None:
        """CANCELLED with a `final` event saying so, unless it started after all (or never existed).

        The event is what a retry of the same request (its request_id names
        this run) is answered with: an ending, not an empty stream.
        """
        if run_id in self._active:
            return
        row = await self._store.get_run(run_id)
        if row is None or row.status.ended:
            return
        ending = agent_pb2.RunEvent(run_id=run_id, thread_id=row.thread_id, sequence=1)
        ending.final.metadata.stop_reason = agent_pb2.STOP_REASON_CANCELLED
        if await self._store.end_run(
            run_id, RunStatus.CANCELLED, [ending], owner=self._instance_id, unstarted=True
        ):
            log.info("run %s: setup did not finish; cancelled", run_id)

    async def _abandon_later(self, run_id: str) -> None:
        """`_cancel_unstarted` until it succeeds, whatever it fails with, at ABANDON_BACKOFF's intervals."""
        for attempt in itertools.count():
            await asyncio.sleep(ABANDON_BACKOFF.delay_s(min(attempt, 8)))
            try:
                await self._cancel_unstarted(run_id)
            except Exception as exc:
                log.warning("run %s: still cannot end it (%s: %s)", run_id, type(exc).__name__, exc)
            else:
                return

    async def _start_when_free(self, run_id: str, thread_id: str) -> RunRow:
        """An ENQUEUEd run: RUNNING as soon as the thread's active run ends."""
        while True:
            try:
                lease_s = self._settings.lease_s
                return await self._store.start_run(run_id, self._instance_id, lease_s, reserve=RESERVE_BLOCK)
            except ThreadBusy:
                pass
            freed = self._thread_freed.setdefault(thread_id, asyncio.Event())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(freed.wait(), QUEUE_POLL_S * 10)
