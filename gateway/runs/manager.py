"""Run lifecycle in one gateway instance: start, resume, cancel, watch, and adopting orphans.

A run executes in a task owned by the RunManager, not by the RPC that asked
for it, so a client that goes away does not stop the run (unless it asked
for that). Ownership of a RUNNING run is a lease in the store, renewed by a
heartbeat; a run whose owner died is claimed by exactly one gateway's orphan
scan (or by an explicit Resume) and continues from its last checkpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any

from agentloop.kernel.errors import FailedPrecondition, InvalidArgument, NotFound, Reason
from agentloop.kernel.settings import GatewaySettings
from agentloop.kernel.telemetry import Telemetry
from agentloop.v1 import agent_pb2, common_pb2
from gateway.deps.catalog import ToolCatalog
from gateway.deps.clients import Dependencies
from gateway.deps.model_catalog import ModelCatalog
from gateway.journal.convert import initial_state, restore
from gateway.journal.events import EventSink
from gateway.journal.run_journal import RunJournal, StoreUnavailable, describe_failure
from gateway.journal.state import STORE_NODE, RunFailure, RunState
from gateway.loop.graph import END, START, run_graph
from gateway.loop.run_context import RunContext
from gateway.policies.hooks import HookRegistry
from gateway.runs.active import ActiveRun
from gateway.runs.following import Followers
from gateway.runs.live import LiveEvents
from gateway.runs.observe import traced_run
from gateway.runs.options import (
    RunLikeRequest,
    check_decisions,
    new_turn_messages,
    run_config,
)
from gateway.runs.recovery import end_after_fault, end_unlaunchable, resumed_note
from gateway.runs.starting import QUEUE_POLL_S, RunStarter
from gateway.store.base import LeaseLost, RunRow, RunStatus, Store, ThreadRow
from gateway.store.ownership import owned_run, owned_thread

log = logging.getLogger(__name__)


def default_instance_id() -> str:
    """host-pid-random: unique per gateway process, readable in the runs table."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


class RunManager:
    """Starts, resumes, cancels and watches runs; keeps leases alive; adopts orphans.

    It holds the runs executing in this process and composes the collaborators that act on
    them: the starter (admission, the thread, the run row: `gateway.runs.starting`), the
    followers (`gateway.runs.following`) and the live feed across gateways
    (`gateway.runs.live`).
    """

    def __init__(
        self, settings: GatewaySettings, deps: Dependencies, store: Store, telemetry: Telemetry | None = None
    ) -> None:
        self._settings = settings
        self._telemetry = telemetry or Telemetry.noop()
        self._deps = deps
        self._store = store
        self._catalog = ToolCatalog(deps.tools, settings.tools_cache_s)
        self._models = ModelCatalog(deps.reasoner, settings.tools_cache_s)
        self.hooks = HookRegistry(settings.hook_modules, settings.hooks, settings.client_hooks)
        self.instance_id = settings.instance_id or default_instance_id()
        self._active: dict[str, ActiveRun] = {}
        self._taking: dict[str, asyncio.Event] = {}
        """Runs being handed to this process (Resume, Cancel, adoption) and not launched yet; each
        event is set once the hand-over is decided (`_taken`)."""
        self._live = LiveEvents.for_store(store, self.instance_id, self._local_sink, self._cancel_here)
        """Events and cancels across gateways (Postgres LISTEN/NOTIFY); None with SQLite (one process)."""
        self._followers = Followers(store, self._active.get, self._live)
        self._background: set[asyncio.Task[None]] = set()
        self._starter = RunStarter(
            settings,
            store,
            self._catalog,
            self._models,
            self.hooks,
            self.instance_id,
            self._active,
            self._launch,
            self._in_background,
        )

    async def begin(self, request: RunLikeRequest, *, streaming: bool, deadline: float | None) -> ActiveRun:
        """Start a new run (`RunStarter.begin`): admitted, its thread and row made, launched here."""
        return await self._starter.begin(request, streaming=streaming, deadline=deadline)

    @property
    def store(self) -> Store:
        return self._store

    @property
    def default_max_steps(self) -> int:
        """The step limit a run gets when it names none."""
        return self._settings.max_steps

    @property
    def active_runs(self) -> int:
        """Runs executing in this process."""
        return len(self._active)

    # --- lifecycle -------------------------------------------------------------
    def start_background(self) -> None:
        """Heartbeat, orphan adoption and retention loops."""
        loops = [self._heartbeat_loop(), self._orphan_loop(), self._retention_loop()]
        if self._live is not None:
            loops.append(self._live.start())
        for loop in loops:
            self._in_background(loop)

    def _in_background(self, work: Coroutine[Any, Any, None], name: str | None = None) -> None:
        """Run `work` as a task of this gateway's own: kept until done, cancelled by `shutdown`."""
        task = asyncio.create_task(work, name=name)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def shutdown(self) -> None:
        """Stop local runs (each is checkpointed at its last transition) and hand their leases over."""
        for task in list(self._background):
            task.cancel()
        runs = [a.task for a in self._active.values() if a.task is not None]
        for run_task in runs:
            run_task.cancel()
        await asyncio.gather(*runs, *self._background, return_exceptions=True)
        with contextlib.suppress(Exception):
            released = await self._store.release(self.instance_id)
            if released:
                log.info("released %d runs for other gateways to resume", released)
        if self._live is not None:
            await self._live.close()

    async def _heartbeat_loop(self) -> None:
        while True:
            await asyncio.sleep(self._settings.lease_s / 3)
            try:
                # Only what executes here: a run whose task ended without
                # releasing it (the store gave up) must become an orphan.
                live = [*self._active, *self._starter.setting_up, *self._taking]
                await self._store.heartbeat(self.instance_id, self._settings.lease_s, live)
            except Exception:
                log.warning("lease heartbeat failed", exc_info=True)

    async def _orphan_loop(self) -> None:
        while True:
            try:
                await self.adopt_orphans()
            except Exception:
                log.warning("orphan scan failed", exc_info=True)
            await asyncio.sleep(self._settings.orphan_scan_s)

    async def _retention_loop(self) -> None:
        keep, ttl = self._settings.retention_keep_checkpoints, self._settings.retention_idle_ttl_s
        if keep <= 0 and ttl <= 0:
            return
        while True:
            try:
                stats = await self._store.prune(keep if keep > 0 else 1_000_000_000, ttl or None)
                log.info("retention: %s", stats)
            except Exception:
                log.warning("retention pass failed", exc_info=True)
            await asyncio.sleep(self._settings.retention_interval_s)

    async def adopt_orphans(self) -> list[str]:
        """Claim runs whose owner's lease expired and continue them here."""
        claimed = await self._store.claim_orphans(self.instance_id, self._settings.lease_s, limit=16)
        for run_id in claimed:
            if not self._take(run_id):
                continue  # already executing (or being handed over) in this process
            log.info("adopting orphaned run %s", run_id)
            try:
                await self._launch_existing(run_id, takeover=True)
            except StoreUnavailable:
                log.warning("could not resume run %s yet: the database is unavailable", run_id)
            except Exception as exc:
                log.exception("could not resume run %s; ending it as failed", run_id)
                await end_unlaunchable(self._store, run_id, exc)
            finally:
                self._taken(run_id)
        return claimed

    async def settled(self, run_id: str) -> None:
        """Return once no request of this process is handing the run to it (its claim is decided)."""
        if (taking := self._taking.get(run_id)) is not None:
            await taking.wait()

    def _taken(self, run_id: str) -> None:
        """The hand-over `_take` began is decided (launched here, or not)."""
        if (taking := self._taking.pop(run_id, None)) is not None:
            taking.set()

    def _take(self, run_id: str) -> bool:
        """Mark a run as being handed to this process; False if it already is, or executes here.

        Synchronous, so two coroutines of this process cannot both take one
        run between the store's compare-and-set and the launch.
        """
        if run_id in self._active or run_id in self._taking:
            return False
        self._taking[run_id] = asyncio.Event()
        return True

    # --- access ----------------------------------------------------------------
    async def owned_run(self, run_id: str, user_id: str) -> RunRow:
        """The run if `user_id` owns it, else NOT_FOUND (gateway.store.ownership)."""
        return await owned_run(self._store, run_id, user_id)

    async def owned_thread(self, thread_id: str, user_id: str) -> ThreadRow:
        """The thread, read once, if `user_id` owns it, else NOT_FOUND (gateway.store.ownership)."""
        return await owned_thread(self._store, thread_id, user_id)

    def local(self, run_id: str) -> ActiveRun | None:
        """The run if it executes in this process."""
        return self._active.get(run_id)

    async def resume(
        self,
        run_id: str,
        user_id: str,
        decisions: list[agent_pb2.ApprovalDecision] | None = None,
        request_id: str = "",
    ) -> ActiveRun:
        """Continue an interrupted run here (or attach to it if it already runs here).

        A PAUSED run needs `decisions` for its pending calls; it becomes
        RUNNING again, in one compare-and-set that exactly one of any number
        of concurrent Resumes (or Cancels) wins, and continues at its tools
        node on this gateway. That compare-and-set also records `request_id`
        (the Resume's idempotency key), so the losing attempts of the same
        Resume attach to the winner's resumption.
        """
        row = await self.owned_run(run_id, user_id)
        if (active := self._active.get(run_id)) is not None and not decisions:
            return active
        if row.status == RunStatus.PAUSED:
            approvals = await self._decisions_for(row, decisions or [])

            async def claim(run_id: str, owner: str, lease_s: float) -> bool:
                return await self._store.claim_paused(run_id, owner, lease_s, request_id or None)

            return await self._claim_and_launch(
                run_id,
                claim,
                busy="is being resumed already",
                lost="was resumed or cancelled by another request",
                approvals=approvals,
            )
        if decisions:
            # Valid decisions, but the run is past them (another Resume or a Cancel won it).
            raise FailedPrecondition(
                f"run {run_id!r} is {row.status.value}, not waiting for approval",
                reason=Reason.RUN_NOT_RESUMABLE,
                metadata={"run_id": run_id, "status": row.status.value},
            )
        if active is not None:
            return active
        if row.status != RunStatus.RUNNING:
            raise FailedPrecondition(
                f"run {run_id!r} is {row.status.value}; only a running run can be resumed",
                reason=Reason.RUN_NOT_RESUMABLE,
                metadata={"run_id": run_id, "status": row.status.value},
            )
        return await self._claim_and_launch(
            run_id,
            self._store.claim_run,
            busy="is being resumed here already; use Watch",
            lost=f"is owned by a live gateway ({row.owner}); Watch it",
            takeover=True,
        )

    async def _claim_and_launch(
        self,
        run_id: str,
        claim: Callable[[str, str, float], Awaitable[bool]],
        *,
        busy: str,
        lost: str,
        approvals: dict[str, agent_pb2.ApprovalDecision] | None = None,
        takeover: bool = False,
    ) -> ActiveRun:
        """Continue a stored run here once this process took it and the store's `claim` gave it to us.

        `busy` says why not when another request of this process is taking
        it, `lost` when another gateway or request won the compare-and-set.
        """
        if not self._take(run_id):
            raise _owned_elsewhere(run_id, busy)
        try:
            if not await claim(run_id, self.instance_id, self._settings.lease_s):
                raise _owned_elsewhere(run_id, lost)
            return await self._launch_existing(run_id, approvals, takeover=takeover)
        finally:
            self._taken(run_id)

    async def _decisions_for(
        self, row: RunRow, decisions: list[agent_pb2.ApprovalDecision]
    ) -> dict[str, agent_pb2.ApprovalDecision]:
        """A paused run's decisions, checked against its pending calls (the thread's last message)."""
        if not decisions:
            raise InvalidArgument(
                "decisions", f"run {row.run_id!r} is waiting for approval: give one per pending call"
            )
        history = await self._store.thread_messages(row.thread_id, user_id=row.user_id)
        return check_decisions(decisions, {c.id for c in (history[-1].tool_calls if history else ())})

    async def _launch_existing(
        self,
        run_id: str,
        approvals: dict[str, agent_pb2.ApprovalDecision] | None = None,
        *,
        takeover: bool = False,
    ) -> ActiveRun:
        """Rebuild a claimed run from its newest checkpoint and continue it.

        `takeover`: the run was RUNNING under a gateway that stopped executing
        it. Its events after the last checkpoint are gone; this process numbers
        its own above every number the old owner may have handed out and says
        so in a `resumed` decision event.
        """
        row = await self._store.get_run(run_id)
        if row is None:
            raise NotFound(
                f"run {run_id!r} not found", reason=Reason.RUN_NOT_FOUND, metadata={"run_id": run_id}
            )
        request = agent_pb2.RunRequest.FromString(row.request)
        # The stored options are the ones resolved at creation: this gateway's defaults do not apply.
        config = run_config(request.options, self._settings, hooks=self.hooks)
        specs = await self._catalog.select(config.tool_names, "options.tools")
        checkpoint = await self._store.latest_checkpoint(run_id)
        history = await self._store.thread_messages(row.thread_id, user_id=row.user_id)
        state = initial_state(run_id, row.thread_id, row.user_id, config, history)
        start, new_messages = START, new_turn_messages(request)
        recorded = await self._store.tool_results(run_id)
        state.run_message_start += len(request.history)
        if checkpoint is not None:
            start, new_messages = checkpoint.record.next_node or END, []
            restore(state, checkpoint.record, recorded, approvals)
        else:
            state.approvals.update(approvals or {})
        sink = EventSink(run_id, row.thread_id, last_sequence=row.next_sequence_base)
        log.info("run %s resumes at %s (step %d)", run_id, start or "END", state.current_step)
        note = resumed_note(row, checkpoint, state, recorded) if takeover else None
        return self._launch(
            state, sink, specs, new_messages, start, None, recorded, note, checkpoints=row.checkpoint_count
        )

    def _launch(
        self,
        state: RunState,
        sink: EventSink,
        specs: list[common_pb2.ToolSpec],
        new_messages: list[common_pb2.Message],
        start: str,
        deadline: float | None,
        recorded: dict[str, common_pb2.ToolResult],
        resumed: str | None = None,
        *,
        checkpoints: int = 0,
    ) -> ActiveRun:
        """Execute a prepared run in a task of its own; `checkpoints`: how many the store holds already."""
        cancel = asyncio.Event()
        journal = RunJournal(
            self._store,
            self.instance_id,
            sink,
            cancel,
            self._telemetry,
            retry_budget_s=self._settings.store_retry_budget_s,
            checkpoint_count=checkpoints,
        )
        ctx = RunContext(
            reasoner=self._deps.reasoner,
            tools=self._deps.tools,
            sink=sink,
            journal=journal,
            tool_specs=specs,
            new_messages=new_messages,
            step_timeout_s=self._settings.step_timeout_s,
            deadline=deadline,
            cancel=cancel,
            recorded_results=recorded,
            memories=journal,
            telemetry=self._telemetry,
        )
        active = ActiveRun(
            state.run_id,
            state.thread_id,
            state.user_id,
            sink,
            cancel,
            state,
            start_sequence=sink.sequence,
            journal=journal,
        )
        self._active[state.run_id] = active
        if resumed is not None:
            sink.decision("resumed", resumed)
        active.task = asyncio.create_task(self._execute(active, ctx, start), name=f"run-{state.run_id}")
        return active

    async def _execute(self, active: ActiveRun, ctx: RunContext, start: str) -> RunState:
        with traced_run(self._telemetry, active.state, start):
            return await self._drive(active, ctx, start)

    async def _drive(self, active: ActiveRun, ctx: RunContext, start: str) -> RunState:
        try:
            if start == END:
                return active.state
            return await run_graph(active.state, ctx, start)
        except LeaseLost:
            log.warning("run %s: lease lost to another gateway; stopping here", active.run_id)
            active.handed_over = True
            return active.state
        except asyncio.CancelledError:
            log.info("run %s: stopped in this process at its last checkpoint", active.run_id)
            raise
        except StoreUnavailable as exc:
            # The run stays RUNNING, but its lease is no longer renewed (it left
            # _active): once it expires, any gateway resumes it from its last
            # checkpoint, this one's orphan scan included. It has not failed, so
            # no client is told it did (no error event): its streams go on from
            # the store, and end UNAVAILABLE with RetryInfo (reattach with
            # Watch) if the database stays away.
            log.error("run %s: %s; it will be resumed when the database is back", active.run_id, exc)
            message = "the database is unavailable; the run will resume from its last checkpoint"
            active.state.error = RunFailure("UNAVAILABLE", message, STORE_NODE)
            active.handed_over = True
            return active.state
        except Exception as exc:
            # Whatever escaped the graph (a database error nobody classified,
            # a bug) ends the run here, once, rather than killing the task.
            log.exception("run %s: unexpected failure; ending it as failed", active.run_id)
            if not await end_after_fault(self._store, active.state, ctx, describe_failure(exc)):
                # The failure could not be stored: no client hears of it, and
                # whoever resumes the run once its lease lapses decides its end.
                active.handed_over = True
            return active.state
        finally:
            ctx.journal.stop()
            self._active.pop(active.run_id, None)
            active.sink.close()
            active.done.set()
            self._starter.thread_freed(active.thread_id)

    # --- following -------------------------------------------------------------
    def follow(self, active: ActiveRun, after_sequence: int = 0) -> AsyncIterator[agent_pb2.RunEvent]:
        """Events of a local run after `after_sequence`, then from the store if it ends elsewhere."""
        return self._followers.follow(active, after_sequence)

    async def watch(
        self, run_id: str, user_id: str, after_sequence: int
    ) -> AsyncIterator[agent_pb2.RunEvent]:
        """Events of any run: live from this process, else from the store until the run ends."""
        if after_sequence < 0:
            raise InvalidArgument("after_sequence", "must be >= 0")
        await self.owned_run(run_id, user_id)
        async for event in self._followers.stored(run_id, after_sequence):
            yield event

    # --- cancelling ----------------------------------------------------------------
    async def cancel(self, run_id: str, user_id: str) -> RunStatus:
        """Stop a run at its next safe point, wherever it executes."""
        while True:
            row = await self.owned_run(run_id, user_id)
            if (active := self._active.get(run_id)) is not None:
                active.cancel.set()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(active.done.wait(), timeout=10)
                return await self._status_of(run_id)
            if row.status.finished:
                return row.status
            if row.status in (RunStatus.PAUSED, RunStatus.RUNNING):
                if not self._take(run_id):
                    await asyncio.sleep(QUEUE_POLL_S)  # being handed to this process: cancel it there
                    continue
                closing = await self._close_here(run_id, row.status)
                if closing is None and row.status == RunStatus.PAUSED:
                    continue  # a Resume (or another Cancel) won it: cancel wherever it runs now
                if closing is not None:
                    await closing.done.wait()
                    return await self._status_of(run_id)
            # Queued: cancelled at once. Running elsewhere: its owner is told at once (live
            # events), and in any case stops at its next checkpoint.
            cancelled = await self._store.request_cancel(run_id)
            if cancelled.status == RunStatus.RUNNING and cancelled.owner and self._live is not None:
                self._live.cancel(cancelled.owner, run_id)
            return cancelled.status

    def _cancel_here(self, run_id: str) -> bool:
        """Another gateway received a Cancel for a run executing here: stop it now."""
        active = self._active.get(run_id)
        if active is None:
            return False
        log.info("run %s: cancelled through another gateway", run_id)
        active.cancel.set()
        return True

    def _local_sink(self, run_id: str) -> EventSink | None:
        active = self._active.get(run_id)
        return active.sink if active is not None else None

    async def _close_here(self, run_id: str, status: RunStatus) -> ActiveRun | None:
        """Take a run nobody executes (PAUSED, or RUNNING with an expired lease) and cancel it here.

        Its pending tool calls get results so the thread stays valid. None if
        the run could not be taken (someone else has it).
        """
        try:
            if status == RunStatus.PAUSED:
                claimed = await self._store.claim_paused(run_id, self.instance_id, self._settings.lease_s)
            else:
                claimed = await self._store.claim_run(run_id, self.instance_id, self._settings.lease_s)
            if not claimed:
                return None
            closing = await self._launch_existing(run_id, takeover=status == RunStatus.RUNNING)
            closing.cancel.set()
            return closing
        finally:
            self._taken(run_id)

    async def _status_of(self, run_id: str) -> RunStatus:
        final = await self._store.get_run(run_id)
        return final.status if final is not None else RunStatus.CANCELLED


def deadline_from(remaining: float | None) -> float | None:
    """A monotonic deadline from a gRPC context's time_remaining()."""
    return None if remaining is None else time.monotonic() + remaining


def _owned_elsewhere(run_id: str, why: str) -> FailedPrecondition:
    """The run is someone else's to continue (RUN_OWNED_ELSEWHERE: the client Watches it instead)."""
    return FailedPrecondition(
        f"run {run_id!r} {why}", reason=Reason.RUN_OWNED_ELSEWHERE, metadata={"run_id": run_id}
    )
