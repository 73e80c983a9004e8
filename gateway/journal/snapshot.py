"""The one conversion between a run's in-memory state and its stored checkpoint.

A checkpoint is fixed-size: the conversation is stored once, message by
message, in the thread, and every tool result once, by call id. So the record
holds the counters and flags, and `restore` rebuilds the rest from what the
store already has: the tool-call history from the run's answered assistant
calls in the thread, the result history from the recorded results. Writing
and reading live side by side here so that a field added to one cannot be
forgotten in the other; the round-trip property test holds them together.

Approvals are typed (`ApprovalDecision`) in memory and in the record. The
memories recalled for the run are stored with it, so a resumed run answers
with the same facts instead of looking them up again.
"""

from __future__ import annotations

from collections.abc import Mapping

from agentloop.internal.v1 import checkpoint_pb2
from agentloop.v1 import agent_pb2, common_pb2
from gateway.journal.events import stop_reason_value
from gateway.journal.state import RunConfig, RunFailure, RunState, StopReason
from gateway.policies.context import Calibration


def initial_state(
    run_id: str, thread_id: str, user_id: str, config: RunConfig, history: list[common_pb2.Message]
) -> RunState:
    """A run's state before any checkpoint: the system prompt, then the stored thread."""
    state = RunState(run_id=run_id, thread_id=thread_id, user_id=user_id, config=config)
    state.messages = [common_pb2.Message(role=common_pb2.ROLE_SYSTEM, content=config.system_prompt), *history]
    state.run_message_start = len(state.messages)
    return state


def to_record(
    state: RunState, node: str, next_node: str, last_sequence: int
) -> checkpoint_pb2.CheckpointRecord:
    """The scalar part of the state after `node`, as stored."""
    record = checkpoint_pb2.CheckpointRecord(
        node=node,
        next_node=next_node,
        current_step=state.current_step,
        llm_calls=state.llm_calls,
        usage=state.usage,
        stop=state.stop,
        stop_reason=state.stop_reason or "",
        final_reply=state.final_reply,
        message_count=len(state.messages) - 1,
        tools_used=state.tools_used,
        tool_calls=len(state.tool_call_history),
        last_sequence=last_sequence,
        suggested_next_step=state.suggested_next_step,
        hint=state.hint,
        structured_output_json=state.structured_output_json,
        run_message_start=state.run_message_start - 1,
        awaiting_approval=state.awaiting_approval,
        approvals=state.approvals,
        calibration_prompt_tokens=state.calibration.prompt_tokens,
        calibration_estimate_tokens=state.calibration.estimate_tokens,
        models_used=state.models_used,
    )
    if state.error is not None:
        record.error.code = state.error.code
        record.error.message = state.error.message
        record.error.node = state.error.node
    if state.recalled is not None:
        record.memory_recalled = True
        record.recalled_memories.extend(state.recalled)
    return record


def restore(
    state: RunState,
    record: checkpoint_pb2.CheckpointRecord,
    recorded: Mapping[str, common_pb2.ToolResult],
    decisions: Mapping[str, agent_pb2.ApprovalDecision] | None = None,
) -> None:
    """Put a checkpoint back into `state`, whose `messages` already hold the stored thread.

    `recorded` is the run's stored tool results by call id; `decisions` are
    approvals that arrived with a Resume (they lift the pause).
    """
    state.current_step = record.current_step
    state.llm_calls = record.llm_calls
    state.usage.CopyFrom(record.usage)
    state.stop = record.stop
    state.stop_reason = StopReason(record.stop_reason) if record.stop_reason else None
    state.final_reply = record.final_reply
    state.tools_used = list(record.tools_used)
    state.models_used = list(record.models_used)
    state.suggested_next_step = record.suggested_next_step
    state.hint = record.hint
    state.structured_output_json = record.structured_output_json
    state.run_message_start = record.run_message_start + 1
    state.awaiting_approval = record.awaiting_approval and not decisions
    if decisions and state.stop_reason == StopReason.PAUSED:
        state.stop_reason = None
    state.approvals = {**record.approvals, **(decisions or {})}
    state.calibration = Calibration(record.calibration_prompt_tokens, record.calibration_estimate_tokens)
    state.error = (
        RunFailure(record.error.code, record.error.message, record.error.node) if record.error.code else None
    )
    state.recalled = list(record.recalled_memories) if record.memory_recalled else None
    state.tool_call_history, state.tool_result_history = _histories(state, record.tool_calls, recorded)


def _histories(
    state: RunState, count: int, recorded: Mapping[str, common_pb2.ToolResult]
) -> tuple[list[common_pb2.ToolCall], list[common_pb2.ToolResult]]:
    """The run's finished tool calls (thread order) and their results (completion order).

    A call is finished once a tool message answers it; the calls of a round
    still pending are left to the tools node, which replays their recorded
    results. At most `count` calls: calls closed by a failure have answers
    but were never run.
    """
    answered = {m.tool_call_id for m in state.run_messages() if m.role == common_pb2.ROLE_TOOL}
    calls = [
        call
        for message in state.run_messages()
        if message.role == common_pb2.ROLE_ASSISTANT
        for call in message.tool_calls
        if call.id in answered
    ]
    results = [result for call_id, result in recorded.items() if call_id in answered]
    return calls[:count], results


def metadata_of(source: RunState | checkpoint_pb2.CheckpointRecord) -> agent_pb2.RunMetadata:
    """seed 000's finalize metadata, of a live run or of a stored checkpoint (the same figures)."""
    if isinstance(source, checkpoint_pb2.CheckpointRecord):
        tool_calls, models = source.tool_calls, list(source.models_used)
    else:
        tool_calls, models = len(source.tool_call_history), source.models_used
    return agent_pb2.RunMetadata(
        steps_taken=source.current_step,
        tools_used=source.tools_used,
        stop_reason=stop_reason_value(source.stop_reason),
        llm_calls=source.llm_calls,
        usage=source.usage,
        tool_calls=tool_calls,
        models=models,
    )
