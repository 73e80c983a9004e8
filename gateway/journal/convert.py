"""The one conversion between what the gateway holds and the contract's messages.

- a run's in-memory state ⇄ its stored checkpoint record (`to_record`, `restore`,
  `initial_state`);
- a run's state or a stored checkpoint → what clients are told: `metadata_of`, `final_event`;
- stored rows → the Agent service's messages: `checkpoint_to_proto`, `run_info`;
- names ⇄ the contract's enums: stop reasons, decision kinds, status codes, run statuses.

Everything that builds a contract message out of a run lives here, so a field added to the
contract is filled in one place, the same way for a live run and a stored one.

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

import json
from collections.abc import Mapping
from datetime import datetime

import grpc
from google.protobuf import timestamp_pb2

from agentloop.internal.v1 import checkpoint_pb2
from agentloop.kernel.wellknown import dict_to_struct
from agentloop.v1 import agent_pb2, common_pb2
from gateway.journal.budget import bounded_final
from gateway.journal.state import RunConfig, RunFailure, RunState, StopReason
from gateway.policies.context import Calibration
from gateway.store.base import CheckpointRow, Memory, RunRow, RunStatus


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


def final_event(state: RunState) -> agent_pb2.RunFinal:
    """The outcome of a finished run: what this run added, never the whole thread, within 3.5 MiB.

    A run whose answer or messages are bigger is cut (`gateway.journal.budget.bounded_final`, flags set):
    a client with gRPC's default 4 MiB receive limit reads every event; GetThread has the rest.
    """
    final = agent_pb2.RunFinal(
        final_reply=state.final_reply,
        metadata=metadata_of(state),
        run_messages=state.run_messages(),
    )
    if state.structured_output_json:
        final.structured_output.CopyFrom(dict_to_struct(json.loads(state.structured_output_json)))
    return bounded_final(final)


STATUS_TO_PROTO = {
    RunStatus.QUEUED: agent_pb2.RUN_STATUS_QUEUED,
    RunStatus.RUNNING: agent_pb2.RUN_STATUS_RUNNING,
    RunStatus.COMPLETED: agent_pb2.RUN_STATUS_COMPLETED,
    RunStatus.FAILED: agent_pb2.RUN_STATUS_FAILED,
    RunStatus.CANCELLED: agent_pb2.RUN_STATUS_CANCELLED,
    RunStatus.PAUSED: agent_pb2.RUN_STATUS_PAUSED,
}


def timestamp(when: datetime) -> timestamp_pb2.Timestamp:
    """A stored moment as the contract's Timestamp."""
    ts = timestamp_pb2.Timestamp()
    ts.FromDatetime(when)
    return ts


def checkpoint_to_proto(row: CheckpointRow) -> agent_pb2.Checkpoint:
    """A stored checkpoint as the contract shows it."""
    rec = row.record
    return agent_pb2.Checkpoint(
        checkpoint_id=row.checkpoint_id,
        run_id=row.run_id,
        index=row.index,
        node=rec.node,
        next_node=rec.next_node,
        step=rec.current_step,
        message_count=rec.message_count,
        delta_bytes=row.delta_bytes,
        created_at=timestamp(row.created_at),
    )


def run_info(run: RunRow, checkpoint: CheckpointRow | None, default_max_steps: int = 0) -> agent_pb2.RunInfo:
    """A run's identity and counters as of `checkpoint` (its newest when reading the latest state)."""
    request = agent_pb2.RunRequest.FromString(run.request)
    info = agent_pb2.RunInfo(
        run_id=run.run_id,
        thread_id=run.thread_id,
        status=STATUS_TO_PROTO[run.status],
        # Resolved and stored at creation; the default only for runs stored before that.
        max_steps=request.options.max_steps or default_max_steps,
        owner=run.owner or "",
        created_at=timestamp(run.created_at),
        request_id=run.request_id or "",
    )
    if checkpoint is not None:
        rec = checkpoint.record
        info.metadata.CopyFrom(metadata_of(rec))
        info.final_reply = rec.final_reply
        info.next_node = rec.next_node
        info.checkpoint_id = checkpoint.checkpoint_id
    return info


def memory_to_proto(memory: Memory) -> agent_pb2.Memory:
    """A stored fact as ListMemories shows it."""
    return agent_pb2.Memory(
        memory_id=memory.memory_id, text=memory.text, created_at=timestamp(memory.created_at)
    )


# --- names and the contract's enums ---------------------------------------------------------


def stop_reason_value(reason: str | None) -> agent_pb2.StopReason.ValueType:
    """The wire enum of a stop reason ("completed" → STOP_REASON_COMPLETED; "" or None → UNSPECIFIED)."""
    if not reason:
        return agent_pb2.STOP_REASON_UNSPECIFIED
    return agent_pb2.StopReason.Value(f"STOP_REASON_{reason.upper()}")


def decision_kind_value(kind: str) -> agent_pb2.DecisionKind.ValueType:
    """The wire enum of a decision kind ("loop_detected" → DECISION_KIND_LOOP_DETECTED)."""
    return agent_pb2.DecisionKind.Value(f"DECISION_KIND_{kind.upper()}")


def code_value(name: str) -> int:
    """The google.rpc.Code number of a gRPC status code name ("UNAVAILABLE" → 14)."""
    code: int = grpc.StatusCode[name].value[0]
    return code


def status_code(value: int) -> grpc.StatusCode:
    """The gRPC status code of a google.rpc.Code number (UNKNOWN for a number gRPC does not know)."""
    for code in grpc.StatusCode:
        if code.value[0] == value:
            return code
    return grpc.StatusCode.UNKNOWN
