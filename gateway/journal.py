"""Where a run writes itself down: checkpoints and tool results, through the store.

The graph calls the journal at exactly two kinds of moment: when a tool call
finishes (so a crash never makes a finished call run again) and after every
node (a checkpoint committed before the next node starts). The journal also
carries cancellation back from the store: a Cancel received by another gateway
sets a flag that the owner sees on its next write.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from agentloop.v1 import checkpoint_pb2, common_pb2
from gateway.events import EventSink
from gateway.state import RunState
from gateway.store.base import CheckpointWrite, RunStatus, Store


class RunJournal:
    """Persists one run's progress; owned by the gateway instance holding the run's lease."""

    def __init__(self, store: Store, owner: str, sink: EventSink, cancel: asyncio.Event) -> None:
        self._store = store
        self._owner = owner
        self._sink = sink
        self._cancel = cancel
        self.checkpoints_written = 0

    def record(self, state: RunState, node: str, next_node: str) -> checkpoint_pb2.CheckpointRecord:
        """The fixed-size scalar part of the state after `node`."""
        record = checkpoint_pb2.CheckpointRecord(
            node=node,
            next_node=next_node,
            current_step=state.current_step,
            llm_calls=state.llm_calls,
            usage=state.usage,
            stop=state.stop,
            stop_reason=state.stop_reason,
            final_reply=state.final_reply,
            message_count=len(state.messages) - 1,
            tools_used=state.tools_used,
            tool_calls=len(state.tool_call_history),
            last_sequence=self._sink.sequence,
        )
        if state.error is not None:
            code, message, failed_node = state.error
            record.error.code = code
            record.error.message = message
            record.error.node = failed_node
        return record

    async def checkpoint(
        self,
        state: RunState,
        node: str,
        next_node: str,
        new_messages: Sequence[common_pb2.Message],
        status: RunStatus | None = None,
    ) -> None:
        """Commit the transition out of `node` with the messages it added and the events so far."""
        row = await self._store.write_checkpoint(
            CheckpointWrite(
                run_id=state.run_id,
                owner=self._owner,
                record=self.record(state, node, next_node),
                new_messages=new_messages,
                events=self._sink.drain(),
                status=status,
            )
        )
        self.checkpoints_written += 1
        if row.cancel_requested:
            self._cancel.set()

    async def tool_result(self, run_id: str, result: common_pb2.ToolResult) -> None:
        """Persist one finished tool call before anyone is told about it."""
        await self._store.record_tool_result(run_id, self._owner, result)
