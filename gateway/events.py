"""Run events as clients see them: numbered, stamped with run and thread, fanned out live.

The sink is synchronous on purpose: a node that emits a token must not wait
for any client, and numbering must not depend on scheduling. Each event goes
to three places: the run's in-memory history (replayed to late watchers),
every live subscriber's queue, and a buffer the runner persists with the next
checkpoint.
"""

from __future__ import annotations

import asyncio

from agentloop.v1 import agent_pb2, common_pb2

# Marks the end of a run's event stream in subscriber queues.
END_OF_RUN: agent_pb2.RunEvent = agent_pb2.RunEvent()


class EventSink:
    """Builds gap-free numbered RunEvents and hands them to history, subscribers and the persist buffer."""

    def __init__(self, run_id: str, thread_id: str, last_sequence: int = 0) -> None:
        self.run_id = run_id
        self.thread_id = thread_id
        self.sequence = last_sequence
        self.history: list[agent_pb2.RunEvent] = []
        self._pending: list[agent_pb2.RunEvent] = []
        self._subscribers: list[asyncio.Queue[agent_pb2.RunEvent]] = []
        self.closed = False

    # --- fan-out -------------------------------------------------------------
    def subscribe(self) -> asyncio.Queue[agent_pb2.RunEvent]:
        """A queue receiving every event emitted from now on, then END_OF_RUN."""
        queue: asyncio.Queue[agent_pb2.RunEvent] = asyncio.Queue()
        if self.closed:
            queue.put_nowait(END_OF_RUN)
        else:
            self._subscribers.append(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[agent_pb2.RunEvent]) -> None:
        """Stop delivering to `queue`."""
        if queue in self._subscribers:
            self._subscribers.remove(queue)

    @property
    def subscriber_count(self) -> int:
        """How many live streams follow the run."""
        return len(self._subscribers)

    def close(self) -> None:
        """The run is over (or paused in this process): tell every subscriber."""
        self.closed = True
        for queue in self._subscribers:
            queue.put_nowait(END_OF_RUN)
        self._subscribers.clear()

    def drain(self) -> list[agent_pb2.RunEvent]:
        """Events emitted since the last drain, for the next checkpoint write."""
        pending, self._pending = self._pending, []
        return pending

    def _emit(self, event: agent_pb2.RunEvent) -> None:
        self.history.append(event)
        self._pending.append(event)
        for queue in self._subscribers:
            queue.put_nowait(event)

    def _new(self) -> agent_pb2.RunEvent:
        self.sequence += 1
        return agent_pb2.RunEvent(run_id=self.run_id, sequence=self.sequence, thread_id=self.thread_id)

    # --- event kinds -----------------------------------------------------------
    def node_start(self, node: str, step: int) -> None:
        """A node of the graph begins."""
        ev = self._new()
        ev.node_start.node = node
        ev.node_start.step = step
        self._emit(ev)

    def node_end(self, node: str, step: int, duration_ms: float) -> None:
        """A node of the graph finished (emitted once its checkpoint is committed)."""
        ev = self._new()
        ev.node_end.node = node
        ev.node_end.step = step
        ev.node_end.duration_ms = duration_ms
        self._emit(ev)

    def token(self, step: int, token: str = "", reasoning_token: str = "") -> None:
        """A piece of streamed model output."""
        ev = self._new()
        ev.llm_token.token = token
        ev.llm_token.reasoning_token = reasoning_token
        ev.llm_token.step = step
        self._emit(ev)

    def tool_start(self, tool: str, args_json: str, call_id: str) -> None:
        """A tool call began running."""
        ev = self._new()
        ev.tool_start.tool = tool
        ev.tool_start.args_json = args_json
        ev.tool_start.id = call_id
        self._emit(ev)

    def tool_end(self, result: common_pb2.ToolResult) -> None:
        """A tool call produced its one result."""
        ev = self._new()
        ev.tool_end.tool = result.name
        ev.tool_end.id = result.tool_call_id
        ev.tool_end.result.CopyFrom(result)
        self._emit(ev)

    def final(self, final: agent_pb2.RunFinal) -> None:
        """The run's outcome; the last event of a successful run."""
        ev = self._new()
        ev.final.CopyFrom(final)
        self._emit(ev)

    def decision(self, kind: str, detail: str) -> None:
        """A judgement of the loop (loop detected, a hint given, memory stored, a hook acted...)."""
        ev = self._new()
        ev.decision.kind = kind
        ev.decision.detail = detail
        self._emit(ev)

    def interrupt(self, pending: list[common_pb2.ToolCall], reason: str) -> None:
        """The run pauses until a human decides on `pending`."""
        ev = self._new()
        ev.interrupt.pending.extend(pending)
        ev.interrupt.reason = reason
        self._emit(ev)

    def error(self, code: str, message: str, node: str) -> None:
        """The run failed; the last event of a failed run."""
        ev = self._new()
        ev.error.code = code
        ev.error.message = message
        ev.error.node = node
        self._emit(ev)
