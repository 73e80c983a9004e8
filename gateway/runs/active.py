"""A run executing in this process: its task, its events' sink, its cancel switch, its journal.

The manager holds one per run it executes; the starter makes it, the followers read its sink.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from gateway.journal.events import EventSink
from gateway.journal.run_journal import RunJournal
from gateway.journal.state import RunState


@dataclass
class ActiveRun:
    """A run executing in this process."""

    run_id: str
    thread_id: str
    user_id: str
    sink: EventSink
    cancel: asyncio.Event
    state: RunState
    task: asyncio.Task[RunState] | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    start_sequence: int = 0
    """Sequence of the last event emitted before this process took the run (0 for a new run)."""
    journal: RunJournal | None = None
    handed_over: bool = False
    """The run stopped here without an ending the store holds (another gateway owns it now, or the
    database went away): its outcome comes from the store, from whoever continues it."""
