"""Run events as clients see them: numbered, stamped with run and thread, fanned out live.

The sink is synchronous on purpose: a node that emits a token must not wait
for any client, and numbering must not depend on scheduling. Each event goes
to three places: every live subscriber's queue, the run's in-memory history
(replayed to late watchers) and a buffer the runner persists with the next
checkpoint.

When each event may reach anyone (its number reserved; a terminal event, or a tool result the
next checkpoint records, only once stored) is the release gate's to say
(gateway.journal.release): the sink hands it every event and delivers what it lets out.

Streamed tokens are delivered live one by one, but history and the persist
buffer keep them coalesced (consecutive tokens of a step joined into one
event numbered like the last of them, up to `TOKEN_COALESCE_BYTES`), so a
long answer costs its text, not an event per token.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from agentloop.kernel.wellknown import duration
from agentloop.v1 import agent_pb2, common_pb2
from gateway.journal.convert import code_value, decision_kind_value
from gateway.journal.release import ReleaseGate

# Marks the end of a run's event stream in subscriber queues.
END_OF_RUN: agent_pb2.RunEvent = agent_pb2.RunEvent()

RESERVE_BLOCK = 1024
"""Event numbers reserved per store write; a new block is asked for when half of one is used."""
TOKEN_COALESCE_BYTES = 4096
"""Most token text one coalesced history/persisted event carries."""


class EventSink:
    """Numbers RunEvents and hands them to subscribers, history and the persist buffer."""

    def __init__(self, run_id: str, thread_id: str, last_sequence: int = 0) -> None:
        self.run_id = run_id
        self.thread_id = thread_id
        self.sequence = last_sequence
        self.first_sequence = last_sequence + 1
        """The first number this sink hands out; earlier events are in the store."""
        self._gate = ReleaseGate(last_sequence)
        """Decides when each event may reach anyone (gateway.journal.release)."""
        self._history = EventLog()
        self._pending = EventLog()
        self._subscribers: list[asyncio.Queue[agent_pb2.RunEvent]] = []
        self.closed = False
        self.on_reserve: Callable[[int], None] | None = None
        """Called with a number to reserve up to when the reservation runs low (the journal sets it)."""
        self._reserving = 0

    # --- fan-out -------------------------------------------------------------
    def subscribe(self) -> asyncio.Queue[agent_pb2.RunEvent]:
        """A queue receiving every event delivered from now on, then END_OF_RUN."""
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

    @property
    def history(self) -> list[agent_pb2.RunEvent]:
        """Events delivered so far by this sink (tokens coalesced), for late followers."""
        return self._history.events

    @property
    def held_count(self) -> int:
        """Events numbered but not yet deliverable (waiting for a reservation or their checkpoint)."""
        return self._gate.held_count

    @property
    def reserved(self) -> int:
        """Numbers up to here are durably reserved for this owner and may be delivered."""
        return self._gate.reserved

    @property
    def persisted(self) -> int:
        """Events up to here are stored."""
        return self._gate.persisted

    def close(self) -> None:
        """The run is over here (ended, paused, or lost): tell every subscriber.

        Events still held were never seen by anyone; they are dropped, so their
        numbers (above the reservation, or a terminal event never stored) are
        free for whoever continues the run.
        """
        self.closed = True
        self._gate.drop_held()
        for queue in self._subscribers:
            queue.put_nowait(END_OF_RUN)
        self._subscribers.clear()

    def drain(self) -> list[agent_pb2.RunEvent]:
        """Events emitted since the last drain, for the next checkpoint write."""
        return self._pending.take()

    def next_reservation(self) -> int:
        """What the next store write should reserve up to: a block beyond the last number handed out."""
        return max(self.reserved, self.sequence + RESERVE_BLOCK)

    def reserved_upto(self, upto: int) -> None:
        """The store now holds a reservation up to `upto`: deliver what it covers."""
        released = self._gate.reserved_upto(upto)
        self._reserving = 0 if self._reserving <= self.reserved else self._reserving
        self._deliver_all(released)

    def reservation_failed(self) -> None:
        """The background reservation did not happen; the next event asks again."""
        self._reserving = 0

    def stored_upto(self, sequence: int) -> None:
        """A checkpoint holding every event up to `sequence` committed: deliver what waited for it."""
        self._deliver_all(self._gate.stored_upto(sequence))

    def hold_until_stored(self) -> None:
        """Events from the next one on reach nobody until a checkpoint has stored them."""
        self._gate.hold_until_stored(self.sequence + 1)

    def _deliver_all(self, events: list[agent_pb2.RunEvent]) -> None:
        for event in events:
            self._deliver(event)

    def _deliver(self, event: agent_pb2.RunEvent) -> None:
        self._history.add(event)
        for queue in self._subscribers:
            queue.put_nowait(event)

    def _emit(self, event: agent_pb2.RunEvent) -> None:
        self._pending.add(event)
        if self._gate.admit(event):
            self._deliver(event)

    def _new(self) -> agent_pb2.RunEvent:
        self.sequence += 1
        low = self.sequence + RESERVE_BLOCK // 2 > self.reserved
        if low and not self._reserving and self.on_reserve is not None:
            self._reserving = self.next_reservation()
            self.on_reserve(self._reserving)
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
        ev.node_end.duration.CopyFrom(duration(duration_ms / 1000))
        self._emit(ev)

    def token(self, step: int, token: str = "", reasoning_token: str = "") -> None:
        """A piece of streamed model output."""
        ev = self._new()
        if reasoning_token:
            ev.llm_token.reasoning_token = reasoning_token
        else:
            ev.llm_token.token = token
        ev.llm_token.step = step
        self._emit(ev)

    def tool_start(self, name: str, arguments_json: str, tool_call_id: str) -> None:
        """A tool call began running."""
        ev = self._new()
        ev.tool_start.name = name
        ev.tool_start.arguments_json = arguments_json
        ev.tool_start.tool_call_id = tool_call_id
        self._emit(ev)

    def tool_end(self, result: common_pb2.ToolResult) -> None:
        """A tool call produced its one result."""
        ev = self._new()
        ev.tool_end.name = result.name
        ev.tool_end.tool_call_id = result.tool_call_id
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
        ev.decision.kind = decision_kind_value(kind)
        ev.decision.detail = detail
        self._emit(ev)

    def interrupt(self, pending: list[common_pb2.ToolCall], reason: str) -> None:
        """The run pauses until a human decides on `pending`."""
        ev = self._new()
        ev.interrupt.pending.extend(pending)
        ev.interrupt.reason = reason
        self._emit(ev)

    def error(self, code: str, message: str, node: str) -> None:
        """The run failed; the last event of a failed run (delivered once a checkpoint stored it).

        There is no error a run sends without storing it: a run that cannot
        store its failure (the database went away) has not ended, and whoever
        continues it decides its ending; its clients follow that from the store.
        """
        ev = self._new()
        ev.error.code = code_value(code)
        ev.error.message = message
        ev.error.node = node
        self._emit(ev)


_JOIN_EVERY = 32
"""Token strings a _TokenRun holds before joining them (a str object per token costs ~60 bytes)."""


@dataclass
class _TokenRun:
    """Consecutive tokens of one step, kept as Python strings until someone reads them.

    Not a growing protobuf string: upb keeps every value ever assigned to a
    field in the message's arena, so appending to one costs quadratic memory.
    """

    first: agent_pb2.RunEvent
    sequence: int
    tokens: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    size: int = 0

    def add(self, event: agent_pb2.RunEvent) -> None:
        self.sequence = event.sequence
        token = event.llm_token
        if token.token:
            self.tokens.append(token.token)
            if len(self.tokens) >= _JOIN_EVERY:
                self.tokens = ["".join(self.tokens)]
        if token.reasoning_token:
            self.reasoning.append(token.reasoning_token)
            if len(self.reasoning) >= _JOIN_EVERY:
                self.reasoning = ["".join(self.reasoning)]
        self.size += len(token.token) + len(token.reasoning_token)

    def event(self) -> agent_pb2.RunEvent:
        first = self.first
        joined = agent_pb2.RunEvent(run_id=first.run_id, sequence=self.sequence, thread_id=first.thread_id)
        joined.llm_token.step = first.llm_token.step
        if self.reasoning:
            joined.llm_token.reasoning_token = "".join(self.reasoning)
        else:
            joined.llm_token.token = "".join(self.tokens)
        return joined


class EventLog:
    """Events in order, where consecutive tokens of one step are joined (history, persist buffer).

    A joined event takes the newest number, so a replay from before the
    tokens gets all of their text once.
    """

    def __init__(self) -> None:
        self._entries: list[agent_pb2.RunEvent | _TokenRun] = []

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def events(self) -> list[agent_pb2.RunEvent]:
        return [e.event() if isinstance(e, _TokenRun) else e for e in self._entries]

    def add(self, event: agent_pb2.RunEvent) -> None:
        if event.WhichOneof("event") != "llm_token":
            self._entries.append(event)
            return
        last = self._entries[-1] if self._entries else None
        if (
            isinstance(last, _TokenRun)
            and last.first.llm_token.step == event.llm_token.step
            and last.first.llm_token.WhichOneof("content") == event.llm_token.WhichOneof("content")
            and last.size < TOKEN_COALESCE_BYTES
        ):
            last.add(event)
            return
        if isinstance(last, _TokenRun):
            self._entries[-1] = last.event()  # full (or another step's): one message from now on
        run = _TokenRun(first=event, sequence=event.sequence)
        run.add(event)
        self._entries.append(run)

    def take(self) -> list[agent_pb2.RunEvent]:
        """Everything so far, leaving the log empty."""
        events = self.events
        self._entries = []
        return events
