"""What the client hands back: plain, typed values instead of generated protobuf messages.

Applications match on these classes (``match event: case Token(text=t): ...``) and never
touch the wire types, so a change of the wire contract changes one conversion module
(agentloop.client._convert) and not every application.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

TERMINAL = ("Final", "Error", "Interrupt")


@dataclass(frozen=True)
class Event:
    """Fields every event of a run carries."""

    run_id: str
    thread_id: str
    sequence: int
    """Position of the event in its run, increasing; ``watch(after_sequence=)`` resumes after it."""

    @property
    def terminal(self) -> bool:
        """True for an event that ends a run or pauses it: Final, Error or Interrupt."""
        return type(self).__name__ in TERMINAL


@dataclass(frozen=True)
class NodeStarted(Event):
    """A node of the loop started (init_state, agent, tools, finalize)."""

    node: str
    step: int


@dataclass(frozen=True)
class NodeFinished(Event):
    """A node of the loop finished."""

    node: str
    step: int
    duration_ms: float


@dataclass(frozen=True)
class Token(Event):
    """A piece of model output as it is generated: visible ``text`` or ``reasoning``."""

    text: str
    reasoning: str
    step: int


class _WrittenArguments:
    """A tool call's arguments as the model wrote them, which may be malformed JSON."""

    arguments_json: str

    @property
    def arguments(self) -> Any:
        """The arguments parsed, or None when they are not valid JSON."""
        return _loads(self.arguments_json)


@dataclass(frozen=True)
class ToolStarted(_WrittenArguments, Event):
    """A tool call started, with the arguments the model wrote."""

    tool_call_id: str
    name: str
    arguments_json: str


@dataclass(frozen=True)
class ToolFinished(Event):
    """A tool call finished; ``is_error`` results carry an ``error_kind`` (TIMEOUT, EXCEPTION, ...)."""

    tool_call_id: str
    name: str
    content: str
    is_error: bool
    error_kind: str
    duration_ms: float


@dataclass(frozen=True)
class Decision(Event):
    """A judgement of the loop worth showing: loop_detected, flow_guidance, memory_stored, ..."""

    kind: str
    detail: str


@dataclass(frozen=True)
class PendingCall(_WrittenArguments):
    """A tool call waiting for a human decision."""

    tool_call_id: str
    name: str
    arguments_json: str


@dataclass(frozen=True)
class Interrupt(Event):
    """The run paused: ``pending`` calls wait for approve / reject / edit (AgentClient.resume)."""

    pending: tuple[PendingCall, ...]
    reason: str


@dataclass(frozen=True)
class Usage:
    """Token usage summed over the run's model calls."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    reasoning_tokens: int = 0
    cached_prompt_tokens: int = 0
    """Part of prompt_tokens the provider read from its prompt cache (billed lower)."""


@dataclass(frozen=True)
class Message:
    """One message of a conversation; ``role`` is system, user, assistant or tool."""

    role: str
    content: str
    tool_calls: tuple[PendingCall, ...] = ()
    tool_call_id: str = ""
    name: str = ""


@dataclass(frozen=True)
class Final(Event):
    """The run ended with an answer (or was cancelled, or hit a limit: see ``stop_reason``)."""

    reply: str
    stop_reason: str
    """completed, max_steps, needs_more_steps, loop_detected, cancelled, paused or error."""
    steps_taken: int
    tools_used: tuple[str, ...]
    llm_calls: int
    tool_calls: int
    usage: Usage
    messages: tuple[Message, ...]
    structured_output_json: str = ""
    models: tuple[str, ...] = ()
    """The models that answered the run's model calls, first-use order (more than one after a fallback)."""

    @property
    def structured_output(self) -> Any:
        """With an output schema: the validated answer object; else None."""
        return _loads(self.structured_output_json) if self.structured_output_json else None


@dataclass(frozen=True)
class Error(Event):
    """The run failed; ``code`` is a gRPC status code name such as UNAVAILABLE."""

    code: str
    message: str
    node: str


@dataclass(frozen=True)
class ToolResult:
    """The outcome of one tool call, as Invoke reports them."""

    tool_call_id: str
    name: str
    content: str
    is_error: bool
    error_kind: str
    duration_ms: float


@dataclass(frozen=True)
class RunResult:
    """What ``invoke`` returns: the run's ids, its final event and every tool result."""

    run_id: str
    thread_id: str
    final: Final
    tool_results: tuple[ToolResult, ...] = ()

    @property
    def reply(self) -> str:
        return self.final.reply


@dataclass(frozen=True)
class RunInfo:
    """A run as stored: status (QUEUED, RUNNING, COMPLETED, FAILED, CANCELLED, PAUSED) and counters."""

    run_id: str
    thread_id: str
    status: str
    stop_reason: str
    steps_taken: int
    max_steps: int
    final_reply: str
    next_node: str
    checkpoint_id: str
    owner: str
    created_at: datetime | None
    request_id: str = ""
    """The idempotency key the run was started with ("" when none)."""


@dataclass(frozen=True)
class Thread:
    """A conversation and the state of its latest run (``run`` is None before any run)."""

    thread_id: str
    user_id: str
    messages: tuple[Message, ...]
    run: RunInfo | None
    created_at: datetime | None
    updated_at: datetime | None


@dataclass(frozen=True)
class Checkpoint:
    """A saved point of a run; its id reads the thread as of that point (get_thread(checkpoint_id=))."""

    checkpoint_id: str
    run_id: str
    index: int
    node: str
    next_node: str
    step: int
    message_count: int
    delta_bytes: int
    created_at: datetime | None


@dataclass(frozen=True)
class Memory:
    """A fact remembered for a user across threads."""

    memory_id: str
    text: str
    created_at: datetime | None


@dataclass(frozen=True)
class ToolDecision:
    """A human's answer to one pending call; build it with approve(), reject() or edit()."""

    tool_call_id: str
    verdict: str
    """approve, reject or edit."""
    reason: str = ""
    arguments_json: str = ""


@dataclass(frozen=True)
class ThreadSummary:
    """A thread as ``list_threads`` shows it: enough to pick one without reading it whole."""

    thread_id: str
    created_at: datetime | None
    updated_at: datetime | None
    message_count: int
    preview: str
    """The start of its last message (at most 200 characters); "" without messages."""
    latest_run_id: str
    """"" for a thread without runs."""
    latest_run_status: str
    """The latest run's status (COMPLETED, PAUSED, ...); "" for a thread without runs."""


def _call_id(call: PendingCall | str) -> str:
    return call if isinstance(call, str) else call.tool_call_id


def approve(call: PendingCall | str) -> ToolDecision:
    """Run the pending call as the model wrote it."""
    return ToolDecision(_call_id(call), "approve")


def reject(call: PendingCall | str, reason: str = "") -> ToolDecision:
    """Do not run the call; the model reads ``reason`` as its result."""
    return ToolDecision(_call_id(call), "reject", reason=reason)


def edit(call: PendingCall | str, arguments: dict[str, Any] | str) -> ToolDecision:
    """Run the call with other arguments (a dict, or JSON text)."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolDecision(_call_id(call), "edit", arguments_json=text)


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None
