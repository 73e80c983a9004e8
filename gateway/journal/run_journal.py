"""Where a run writes itself down (checkpoints, tool results) and keeps its user's memories.

The graph calls the journal at exactly two kinds of moment: when a tool call
finishes (so a crash never makes a finished call run again) and after every
node (a checkpoint committed before the next node starts). The journal also
carries cancellation back from the store: a Cancel received by another gateway
sets a flag that the owner sees on its next write.

Every store call of a run goes through here and `with_store_retries`
(memories too): a database that is busy ("database is locked") or coming
back costs a run a short wait, never its life; past the retry budget the run
stops here with StoreUnavailable and is resumed from its last checkpoint.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from agentloop.internal.v1 import checkpoint_pb2
from agentloop.kernel.retry import STORE_RETRY_BUDGET_S
from agentloop.kernel.telemetry import Telemetry
from agentloop.v1 import common_pb2
from gateway.journal.convert import to_record
from gateway.journal.events import EventSink
from gateway.journal.state import RunState
from gateway.store.base import CheckpointWrite, Memory, RunStatus, Store
from gateway.store.errors import (
    DATABASE_ERRORS,
    TRANSIENT,
    StoreUnavailable,
    describe_failure,
    with_store_retries,
)

log = logging.getLogger(__name__)

__all__ = [
    "DATABASE_ERRORS",
    "TRANSIENT",
    "RunJournal",
    "StoreUnavailable",
    "describe_failure",
    "with_store_retries",
]


class RunJournal:
    """Persists one run's progress; owned by the gateway instance holding the run's lease."""

    def __init__(
        self,
        store: Store,
        owner: str,
        sink: EventSink,
        cancel: asyncio.Event,
        telemetry: Telemetry | None = None,
        retry_budget_s: float = STORE_RETRY_BUDGET_S,
        checkpoint_count: int = 0,
    ) -> None:
        self._store = store
        self._owner = owner
        self.owner = owner
        self._sink = sink
        self._cancel = cancel
        self._telemetry = telemetry or Telemetry.noop()
        self._budget_s = retry_budget_s
        self._reserving: set[asyncio.Task[None]] = set()
        self._carried: list[common_pb2.ToolResult] = []
        self.checkpoints_written = 0
        self._checkpoint_count = checkpoint_count
        """The run's checkpoints in the store (`runs.checkpoint_count`): the next write is number +1."""
        sink.on_reserve = self._reserve_soon

    def _reserve_soon(self, upto: int) -> None:
        """Reserve event numbers up to `upto` in the background (the sink is synchronous)."""
        task = asyncio.get_running_loop().create_task(self._reserve(upto))
        self._reserving.add(task)
        task.add_done_callback(self._reserving.discard)

    async def _reserve(self, upto: int) -> None:
        try:
            await with_store_retries(
                lambda: self._store.reserve_sequences(self._sink.run_id, self._owner, upto),
                "reserve event numbers",
                self._budget_s,
            )
        except Exception as exc:
            # The run's next write meets the same fault and ends or hands over the run.
            log.warning("run %s: could not reserve event numbers: %s", self._sink.run_id, exc)
            self._sink.reservation_failed()
            return
        self._sink.reserved_upto(upto)

    def stop(self) -> None:
        """Abandon background reservations (the run is over in this process)."""
        for task in list(self._reserving):
            task.cancel()

    def record(self, state: RunState, node: str, next_node: str) -> checkpoint_pb2.CheckpointRecord:
        """The checkpoint of the state after `node`, numbered with the events emitted so far."""
        return to_record(state, node, next_node, self._sink.sequence)

    async def checkpoint(
        self,
        state: RunState,
        node: str,
        next_node: str,
        new_messages: Sequence[common_pb2.Message],
        status: RunStatus | None = None,
    ) -> None:
        """Commit the transition out of `node` with the messages it added and the events so far.

        Reserves the next block of event numbers in the same write, and
        records the tool results carried to it (`record_with_next_checkpoint`);
        events held for the commit (a terminal one, those results') are
        delivered after it. The write names the checkpoint number it becomes,
        so a retry of one whose COMMIT went through unacknowledged (a
        connection lost at that moment) does not write it twice.
        """
        reserve = self._sink.next_reservation()
        write = CheckpointWrite(
            run_id=state.run_id,
            owner=self._owner,
            record=self.record(state, node, next_node),
            new_messages=new_messages,
            events=self._sink.drain(),
            status=status,
            sequence_reserved=reserve,
            tool_results=list(self._carried),
            index=self._checkpoint_count + 1,
        )
        attributes = {
            "agentloop.run_id": state.run_id,
            "agentloop.node": node,
            "agentloop.next_node": next_node,
        }
        with self._telemetry.span("store write_checkpoint", attributes=attributes):
            row = await with_store_retries(
                lambda: self._store.write_checkpoint(write), "checkpoint", self._budget_s
            )
        self.checkpoints_written += 1
        self._checkpoint_count = row.checkpoint_count
        del self._carried[: len(write.tool_results)]
        self._sink.reserved_upto(row.sequence_reserved)
        self._sink.stored_upto(write.record.last_sequence)
        if row.cancel_requested:
            self._cancel.set()

    async def add_memory(self, user_id: str, text: str) -> Memory:
        """Keep a fact for the run's user, retried like a checkpoint (`gateway.loop.memory.Memories`)."""
        return await with_store_retries(
            lambda: self._store.add_memory(user_id, text), "keep a memory", self._budget_s
        )

    async def list_memories(self, user_id: str, limit: int | None = None) -> list[Memory]:
        """The user's newest facts, newest first, retried like a checkpoint.

        See `gateway.loop.memory.Memories`.
        """
        return await with_store_retries(
            lambda: self._store.list_memories(user_id, limit), "recall memories", self._budget_s
        )

    async def tool_result(self, run_id: str, result: common_pb2.ToolResult) -> None:
        """Persist one finished tool call before anyone is told about it."""
        await self.tool_results(run_id, [result])

    @property
    def carried_results(self) -> dict[str, common_pb2.ToolResult]:
        """Finished tool calls the next write records, by call id (announced, not stored yet)."""
        return {r.tool_call_id: r for r in self._carried}

    def record_with_next_checkpoint(self, results: Sequence[common_pb2.ToolResult]) -> None:
        """Have the next checkpoint record `results`; their events (emitted from now on) wait for it.

        For a parallel round's last results: the checkpoint that ends the
        tools node follows at once, so recording them in it saves a
        transaction per step, and nobody hears of them before they are
        stored. A crash before that commit loses them as a crash before their
        own write would; the calls run again on resume.
        """
        self._sink.hold_until_stored()
        self._carried.extend(results)

    async def tool_results(self, run_id: str, results: Sequence[common_pb2.ToolResult]) -> None:
        """Persist finished tool calls (one transaction) before anyone is told about them.

        Results carried to the next checkpoint go first, so the store keeps
        the order in which the calls finished.
        """
        if not results:
            return
        carried = len(self._carried)
        results = [*self._carried, *results]
        with self._telemetry.span(
            "store record_tool_results",
            attributes={"agentloop.run_id": run_id, "agentloop.tool_results": len(results)},
        ):
            await with_store_retries(
                lambda: self._store.record_tool_results(run_id, self._owner, results),
                "tool results",
                self._budget_s,
            )
        del self._carried[:carried]
