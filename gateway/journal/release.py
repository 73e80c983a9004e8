"""When a client may hear of a run event: the one gate every event passes before anyone sees it.

The sink (gateway.journal.events) numbers events; they reach live subscribers, the run's
history (replayed to late watchers) and, through those, the other gateways' watchers only
once this gate lets them through, in order. It holds back:

- every event whose number is not yet durably reserved for this owner (the runs row's
  `sequence_reserved`): a gateway taking the run over numbers above the reserved mark, so
  events lost with a dead owner leave a gap, never a reused number;
- a terminal event (`final`, `error`), until the checkpoint that stores it has committed: a
  client never sees an outcome the store lacks, not even a failure that could not be stored
  (that run has not ended: it goes on from its last checkpoint, and its clients follow it from
  the store);
- a tool result the next checkpoint records (`hold_until_stored`), until that checkpoint has
  committed: a client never sees a result the store lacks.

It is told what the store holds (`reserved_upto`, `stored_upto`) and answers with the events
that may go out now (`admit` says whether a new one may); nothing else decides it. Events
still held when the run stops here were seen by no one and are dropped (`drop_held`): their
numbers are free for whoever continues it.
"""

from __future__ import annotations

from collections import deque

from agentloop.v1 import agent_pb2


def is_terminal(event: agent_pb2.RunEvent) -> bool:
    """A final or error event: the last a run sends."""
    return event.WhichOneof("event") in ("final", "error")


class ReleaseGate:
    """Holds a run's events until the store holds what they announce; releases them in order."""

    def __init__(self, last_sequence: int = 0) -> None:
        self.reserved = last_sequence
        """Numbers up to here are durably reserved for this owner and may be delivered."""
        self.persisted = last_sequence
        """Events up to here are stored."""
        self._held: deque[agent_pb2.RunEvent] = deque()
        self._barrier: int | None = None
        """The first event that waits for a checkpoint to store it (None: none waits)."""

    @property
    def held_count(self) -> int:
        """Events numbered but not yet deliverable (waiting for a reservation or their checkpoint)."""
        return len(self._held)

    def admit(self, event: agent_pb2.RunEvent) -> bool:
        """A new event: True if it may go out now, False if it is held (it, or earlier ones, wait).

        A bool, not a list: this runs for every streamed token.
        """
        if is_terminal(event) and self._barrier is None:
            self._barrier = event.sequence
        if not self._held and self._deliverable(event):
            return True
        self._held.append(event)
        return False

    def reserved_upto(self, upto: int) -> list[agent_pb2.RunEvent]:
        """The store holds a reservation up to `upto`: the events it lets out."""
        self.reserved = max(self.reserved, upto)
        return self._released()

    def stored_upto(self, sequence: int) -> list[agent_pb2.RunEvent]:
        """A checkpoint holding every event up to `sequence` committed: the events that waited for it."""
        self.persisted = max(self.persisted, sequence)
        if self._barrier is not None and self._barrier <= self.persisted:
            self._barrier = None
        return self._released()

    def hold_until_stored(self, next_sequence: int) -> None:
        """Events from `next_sequence` on wait until a checkpoint has stored them.

        For what the next checkpoint itself records (a tool round's last results): their
        events wait for that commit, like a terminal event.
        """
        if self._barrier is None:
            self._barrier = next_sequence

    def drop_held(self) -> None:
        """The run stopped here: what is still held was seen by no one and never will be."""
        self._held.clear()

    def _deliverable(self, event: agent_pb2.RunEvent) -> bool:
        if event.sequence > self.reserved:
            return False
        return self._barrier is None or event.sequence < self._barrier or event.sequence <= self.persisted

    def _released(self) -> list[agent_pb2.RunEvent]:
        out: list[agent_pb2.RunEvent] = []
        while self._held and self._deliverable(self._held[0]):
            out.append(self._held.popleft())
        return out
