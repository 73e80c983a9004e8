"""What a node gets besides the state: dependencies, the event sink, the journal and the run's limits."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TypeVar

from agentloop.kernel.telemetry import Telemetry
from agentloop.v1 import common_pb2
from gateway.deps.clients import ReasonerClient, ToolsClient
from gateway.journal.events import EventSink
from gateway.journal.run_journal import RunJournal
from gateway.journal.state import RunState
from gateway.loop.memory import Memories
from gateway.policies.hooks import HookContext

T = TypeVar("T")

FINAL_ANSWER_TOOL = "final_answer"


class RunCancelled(Exception):
    """Cancel arrived while a node was waiting on a dependency."""


@dataclass
class RunContext:
    """What nodes need besides the state: dependencies, events, the journal, limits."""

    reasoner: ReasonerClient
    tools: ToolsClient
    sink: EventSink
    journal: RunJournal
    tool_specs: list[common_pb2.ToolSpec]
    new_messages: list[common_pb2.Message]
    """Messages init_state adds to the thread: seed history (new thread) and the question."""
    step_timeout_s: float
    deadline: float | None = None
    cancel: asyncio.Event = field(default_factory=asyncio.Event)
    recorded_results: dict[str, common_pb2.ToolResult] = field(default_factory=dict)
    """Tool results persisted before this process took the run over (resume)."""
    memories: Memories | None = None
    """Where the user's long-term memories are kept (the journal, which retries the store);
    None: this run neither keeps nor recalls any."""
    telemetry: Telemetry = field(default_factory=Telemetry.noop)
    """Spans and metrics of this gateway process (node spans, step durations)."""

    def __post_init__(self) -> None:
        self.specs_by_name = {s.name: s for s in self.tool_specs}

    def timeout(self) -> float:
        """Timeout for the next dependency call: the step timeout, cut to the run's deadline."""
        if self.deadline is None:
            return self.step_timeout_s
        return max(0.001, min(self.step_timeout_s, self.deadline - time.monotonic()))

    async def unless_cancelled(self, work: Awaitable[T]) -> T:
        """Await `work`, abandoning it (RunCancelled) as soon as Cancel arrives."""
        if self.cancel.is_set():
            if asyncio.iscoroutine(work):
                work.close()
            raise RunCancelled
        task = asyncio.ensure_future(work)
        waiter = asyncio.ensure_future(self.cancel.wait())
        try:
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
        if task.done():
            return task.result()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        raise RunCancelled


def hook_context(state: RunState) -> HookContext:
    return HookContext(state.run_id, state.thread_id, state.user_id, state.current_step)
