"""The run's state and the updates nodes return.

Nodes never mutate state directly: each returns an `Update` that `RunState.apply`
folds in. Updates are small and append-only (new messages, counter increments,
flags), which is what lets a step be recorded as a delta rather than as a copy
of the whole state. Every field has a default so state written by an older
version still loads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from agentloop.v1 import agent_pb2, common_pb2
from gateway.policies.context import Calibration
from gateway.policies.hooks import Hook
from gateway.policies.loop_detection import LoopSettings

DEFAULT_MAX_STEPS = 25


class StopReason(StrEnum):
    """Why a run stopped.

    The values are stored in checkpoints and name the wire enum (`completed` is
    STOP_REASON_COMPLETED), so they never change once released.
    """

    COMPLETED = "completed"
    MAX_STEPS = "max_steps"
    ERROR = "error"
    CANCELLED = "cancelled"
    LOOP_DETECTED = "loop_detected"
    NEEDS_MORE_STEPS = "needs_more_steps"
    PAUSED = "paused"
    STRUCTURED_OUTPUT_MISSING = "structured_output_missing"
    """An output schema was asked for and no answer validated within the step limit."""


@dataclass(frozen=True)
class RunFailure:
    """Why a run failed: what its error event and a unary caller's status carry."""

    code: str
    """The gRPC status code's name (UNAVAILABLE, INTERNAL, ...)."""
    message: str
    node: str
    """The node that failed; "store" when the database went away and the run is resumed later."""

    @property
    def interrupted(self) -> bool:
        """The run did not fail: this process lost its database and another execution resumes it."""
        return self.node == STORE_NODE


STORE_NODE = "store"


@dataclass(frozen=True)
class RunConfig:
    """The per-run settings after defaults were applied and the request validated."""

    system_prompt: str
    max_steps: int = DEFAULT_MAX_STEPS
    stream_mode: int = agent_pb2.STREAM_MODE_FINAL_ONLY
    model: str = ""
    tool_names: tuple[str, ...] = ()
    tool_timeout_s: float = 0.0
    temperature: float | None = None
    context_budget_tokens: int = 0
    context_keep_recent_tokens: int = 0
    context_summary_prompt: str = ""
    session_memory: bool = False
    cancel_on_disconnect: bool = False
    loops: LoopSettings = field(default_factory=LoopSettings)
    output_schema: dict[str, Any] | None = None
    serial_tools: bool = False
    require_approval: frozenset[str] = frozenset()
    hooks: tuple[Hook, ...] = ()
    memory: bool = True
    flow_guidance: bool = True
    max_tool_calls_per_step: int = 32
    max_argument_bytes: int = 64 * 1024


@dataclass
class Update:
    """What one node changes; lists append, counters add, set fields overwrite."""

    messages: list[common_pb2.Message] = field(default_factory=list)
    tool_calls: list[common_pb2.ToolCall] = field(default_factory=list)
    tool_results: list[common_pb2.ToolResult] = field(default_factory=list)
    steps: int = 0
    llm_calls: int = 0
    usage: common_pb2.Usage | None = None
    stop: bool | None = None
    stop_reason: StopReason | None = None
    final_reply: str | None = None
    suggested_next_step: str | None = None
    hint: str | None = None
    structured_output_json: str | None = None
    awaiting_approval: bool | None = None
    approvals: dict[str, agent_pb2.ApprovalDecision] | None = None
    recalled: list[str] | None = None
    calibration: Calibration | None = None
    models: list[str] = field(default_factory=list)
    """The models that answered this node's model calls (StepResult.answered_by)."""
    summary_stalled_at: int | None = None


_OVERWRITTEN = (
    "stop",
    "stop_reason",
    "final_reply",
    "suggested_next_step",
    "hint",
    "structured_output_json",
    "awaiting_approval",
    "approvals",
    "recalled",
    "calibration",
    "summary_stalled_at",
)
"""Update fields that replace the state's value when set (the others append or add)."""


@dataclass
class RunState:
    """Everything the loop knows about one run (seed 000's fields, plus the conversation)."""

    run_id: str
    thread_id: str
    user_id: str
    config: RunConfig
    messages: list[common_pb2.Message] = field(default_factory=list)
    current_step: int = 0
    tool_call_history: list[common_pb2.ToolCall] = field(default_factory=list)
    tool_result_history: list[common_pb2.ToolResult] = field(default_factory=list)
    tools_used: list[str] = field(default_factory=list)
    llm_calls: int = 0
    usage: common_pb2.Usage = field(default_factory=common_pb2.Usage)
    stop: bool = False
    stop_reason: StopReason | None = None
    """None while the run goes on (stored as "")."""
    final_reply: str = ""
    error: RunFailure | None = None
    suggested_next_step: str = ""
    hint: str = ""
    """One-time flow-guidance hint for the next model call; never stored in the conversation."""
    structured_output_json: str = ""
    run_message_start: int = 1
    """Index in `messages` where this run's own messages start."""
    awaiting_approval: bool = False
    approvals: dict[str, agent_pb2.ApprovalDecision] = field(default_factory=dict)
    """Human decisions on the pending tool calls, by call id (consumed by the next tools node)."""
    recalled: list[str] | None = None
    """Facts recalled from long-term memory for this run (None: not looked up yet)."""
    calibration: Calibration = field(default_factory=Calibration)
    """The newest model call's reported prompt size next to its estimate (context budgeting)."""
    models_used: list[str] = field(default_factory=list)
    """The models that answered this run's model calls, first-use order (more than one after a fallback)."""
    summary_stalled_at: int | None = None
    """Length of `messages` when a summary attempt of this run failed or left the prompt over the
    budget: the next attempt waits for a new crossing (gateway.loop.compression.summary_due). Not
    checkpointed: a resumed run may try once more."""

    @property
    def max_steps(self) -> int:
        """The step budget of this run."""
        return self.config.max_steps

    @property
    def last_message(self) -> common_pb2.Message | None:
        """The newest message of the conversation, if any."""
        return self.messages[-1] if self.messages else None

    def pending_tool_calls(self) -> list[common_pb2.ToolCall]:
        """Tool calls of the last assistant message (what the tools node must run)."""
        last = self.last_message
        if last is None or last.role != common_pb2.ROLE_ASSISTANT:
            return []
        return list(last.tool_calls)

    def run_messages(self) -> list[common_pb2.Message]:
        """The messages this run added (its question onwards)."""
        return self.messages[self.run_message_start :]

    def apply(self, update: Update) -> None:
        """Fold a node's update into the state."""
        self.messages.extend(update.messages)
        self.tool_call_history.extend(update.tool_calls)
        self.tool_result_history.extend(update.tool_results)
        for call in update.tool_calls:
            if call.name not in self.tools_used:
                self.tools_used.append(call.name)
        for model in update.models:
            if model and model not in self.models_used:
                self.models_used.append(model)
        self.current_step += update.steps
        self.llm_calls += update.llm_calls
        if update.usage is not None:
            self.usage.prompt_tokens += update.usage.prompt_tokens
            self.usage.completion_tokens += update.usage.completion_tokens
            self.usage.total_tokens += update.usage.total_tokens
            self.usage.reasoning_tokens += update.usage.reasoning_tokens
            self.usage.cached_prompt_tokens += update.usage.cached_prompt_tokens
        for name in _OVERWRITTEN:
            if (value := getattr(update, name)) is not None:
                setattr(self, name, value)
