"""The one place where client values meet the generated agentloop.v1 messages.

Requests are built here and responses read here; everything else in the client works
with the dataclasses of agentloop.client.events. When the wire contract renames a field,
this module is the one to change.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp
from google.rpc import code_pb2

from agentloop.client import events as ev
from agentloop.kernel.wellknown import dict_to_struct, seconds, struct_to_dict
from agentloop.v1 import agent_pb2, common_pb2

STREAM_MODES = {
    "final": agent_pb2.STREAM_MODE_FINAL_ONLY,
    "all": agent_pb2.STREAM_MODE_ALL_STEPS,
    "none": agent_pb2.STREAM_MODE_NONE,
}
_VERDICTS = {
    "approve": agent_pb2.ApprovalDecision.VERDICT_APPROVE,
    "reject": agent_pb2.ApprovalDecision.VERDICT_REJECT,
    "edit": agent_pb2.ApprovalDecision.VERDICT_EDIT,
}
_ROLES = {
    common_pb2.ROLE_SYSTEM: "system",
    common_pb2.ROLE_USER: "user",
    common_pb2.ROLE_ASSISTANT: "assistant",
    common_pb2.ROLE_TOOL: "tool",
}


def run_options(
    *,
    system: str | None = None,
    model: str | None = None,
    max_steps: int | None = None,
    stream: str = "final",
    tools: Sequence[str] | None = None,
    output_schema: Mapping[str, Any] | str | None = None,
    require_approval: Sequence[str] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> agent_pb2.RunOptions:
    """RunOptions from the client's keyword arguments; ``extra`` names further RunOptions fields."""
    if stream not in STREAM_MODES:
        raise ValueError(f"stream: must be one of {sorted(STREAM_MODES)}, not {stream!r}")
    options = agent_pb2.RunOptions(**dict(extra or {}))
    options.stream_mode = STREAM_MODES[stream]
    if system is not None:
        options.system_prompt = system
    if model is not None:
        options.model = model
    if max_steps is not None:
        options.max_steps = max_steps
    if tools:
        options.tools.extend(tools)
    if require_approval:
        options.require_approval.extend(require_approval)
    if output_schema is not None:
        schema = json.loads(output_schema) if isinstance(output_schema, str) else output_schema
        options.output_schema.CopyFrom(dict_to_struct(dict(schema)))
    return options


def run_request(
    text: str, thread_id: str, user_id: str, options: agent_pb2.RunOptions, request_id: str
) -> agent_pb2.RunRequest:
    return agent_pb2.RunRequest(
        input=text, thread_id=thread_id, user_id=user_id, options=options, request_id=request_id
    )


def invoke_request(
    text: str, thread_id: str, user_id: str, options: agent_pb2.RunOptions, request_id: str
) -> agent_pb2.InvokeRequest:
    return agent_pb2.InvokeRequest(
        input=text, thread_id=thread_id, user_id=user_id, options=options, request_id=request_id
    )


def watch_request(run_id: str, user_id: str, after_sequence: int) -> agent_pb2.WatchRequest:
    return agent_pb2.WatchRequest(run_id=run_id, user_id=user_id, after_sequence=after_sequence)


def resume_request(
    run_id: str, user_id: str, decisions: Iterable[ev.ToolDecision], request_id: str
) -> agent_pb2.ResumeRequest:
    wire = []
    for decision in decisions:
        if decision.verdict not in _VERDICTS:
            raise ValueError(f"decisions: verdict must be approve, reject or edit, not {decision.verdict!r}")
        wire.append(
            agent_pb2.ApprovalDecision(
                tool_call_id=decision.tool_call_id,
                verdict=_VERDICTS[decision.verdict],
                reason=decision.reason,
                arguments_json=decision.arguments_json,
            )
        )
    return agent_pb2.ResumeRequest(run_id=run_id, user_id=user_id, decisions=wire, request_id=request_id)


def cancel_request(run_id: str, user_id: str) -> agent_pb2.CancelRequest:
    return agent_pb2.CancelRequest(run_id=run_id, user_id=user_id)


def thread_request(thread_id: str, user_id: str, checkpoint_id: str) -> agent_pb2.GetThreadRequest:
    return agent_pb2.GetThreadRequest(thread_id=thread_id, user_id=user_id, checkpoint_id=checkpoint_id)


def checkpoints_request(
    thread_id: str, user_id: str, run_id: str, page_token: str, page_size: int
) -> agent_pb2.ListCheckpointsRequest:
    return agent_pb2.ListCheckpointsRequest(
        thread_id=thread_id, user_id=user_id, run_id=run_id, page_token=page_token, page_size=page_size
    )


def memories_request(user_id: str) -> agent_pb2.ListMemoriesRequest:
    return agent_pb2.ListMemoriesRequest(user_id=user_id)


def delete_memory_request(user_id: str, memory_id: str) -> agent_pb2.DeleteMemoryRequest:
    return agent_pb2.DeleteMemoryRequest(user_id=user_id, memory_id=memory_id)


# --- responses --------------------------------------------------------------------------------


def event(response: Any) -> ev.Event:
    """The client event of a RunResponse, ResumeResponse or WatchResponse."""
    e: agent_pb2.RunEvent = response.event
    head = (e.run_id, e.thread_id, e.sequence)
    kind = e.WhichOneof("event")
    if kind == "llm_token":
        return ev.Token(
            *head, text=e.llm_token.token, reasoning=e.llm_token.reasoning_token, step=e.llm_token.step
        )
    if kind == "tool_start":
        ts = e.tool_start
        return ev.ToolStarted(
            *head, tool_call_id=ts.tool_call_id, name=ts.name, arguments_json=ts.arguments_json
        )
    if kind == "tool_end":
        r = tool_result(e.tool_end.result)
        return ev.ToolFinished(
            *head,
            tool_call_id=e.tool_end.tool_call_id,
            name=e.tool_end.name,
            content=r.content,
            is_error=r.is_error,
            error_kind=r.error_kind,
            duration_ms=r.duration_ms,
        )
    if kind == "node_start":
        return ev.NodeStarted(*head, node=e.node_start.node, step=e.node_start.step)
    if kind == "node_end":
        n = e.node_end
        return ev.NodeFinished(*head, node=n.node, step=n.step, duration_ms=seconds(n.duration) * 1000)
    if kind == "decision":
        return ev.Decision(
            *head, kind=_enum_name(agent_pb2.DecisionKind, e.decision.kind), detail=e.decision.detail
        )
    if kind == "interrupt":
        pending = tuple(_call(c) for c in e.interrupt.pending)
        return ev.Interrupt(*head, pending=pending, reason=e.interrupt.reason)
    if kind == "final":
        return final(e.final, *head)
    if kind == "error":
        return ev.Error(
            *head, code=code_pb2.Code.Name(e.error.code), message=e.error.message, node=e.error.node
        )
    raise ValueError(f"event: unknown kind {kind!r} (a newer gateway?)")


def final(f: agent_pb2.RunFinal, run_id: str, thread_id: str, sequence: int) -> ev.Final:
    md = f.metadata
    usage = ev.Usage(
        md.usage.prompt_tokens,
        md.usage.completion_tokens,
        md.usage.total_tokens,
        md.usage.reasoning_tokens,
        md.usage.cached_prompt_tokens,
    )
    return ev.Final(
        run_id,
        thread_id,
        sequence,
        reply=f.final_reply,
        stop_reason=stop_reason(md.stop_reason),
        steps_taken=md.steps_taken,
        tools_used=tuple(md.tools_used),
        llm_calls=md.llm_calls,
        tool_calls=md.tool_calls,
        usage=usage,
        messages=tuple(message(m) for m in f.run_messages),
        structured_output_json=(
            json.dumps(struct_to_dict(f.structured_output)) if f.HasField("structured_output") else ""
        ),
        models=tuple(md.models),
    )


def invoke_result(r: agent_pb2.InvokeResponse) -> ev.RunResult:
    return ev.RunResult(
        run_id=r.run_id,
        thread_id=r.thread_id,
        final=final(r.final, r.run_id, r.thread_id, 0),
        tool_results=tuple(tool_result(t) for t in r.tool_results),
    )


def tool_result(r: common_pb2.ToolResult) -> ev.ToolResult:
    kind = common_pb2.ToolErrorKind.Name(r.error_kind).removeprefix("TOOL_ERROR_KIND_") if r.is_error else ""
    return ev.ToolResult(r.tool_call_id, r.name, r.content, r.is_error, kind, seconds(r.duration) * 1000)


def _call(c: common_pb2.ToolCall) -> ev.PendingCall:
    return ev.PendingCall(tool_call_id=c.id, name=c.name, arguments_json=c.arguments_json)


def message(m: common_pb2.Message) -> ev.Message:
    return ev.Message(
        role=_ROLES.get(m.role, "unspecified"),
        content=m.content,
        tool_calls=tuple(_call(c) for c in m.tool_calls),
        tool_call_id=m.tool_call_id,
        name=m.name,
    )


def _enum_name(enum: Any, value: int) -> str:
    """The lowercase name of an enum value without its type prefix ("loop_detected"), "" when unset."""
    if value == 0:
        return ""
    prefix = enum.DESCRIPTOR.values[0].name.removesuffix("UNSPECIFIED")
    return str(enum.Name(value)).removeprefix(prefix).lower()


def stop_reason(value: int) -> str:
    """The run's stop reason as the string the client's events carry ("completed", "max_steps", ...)."""
    return _enum_name(agent_pb2.StopReason, value)


def run_status(status: int) -> str:
    return agent_pb2.RunStatus.Name(status).removeprefix("RUN_STATUS_")  # type: ignore[arg-type]


def run_info(s: agent_pb2.RunInfo) -> ev.RunInfo:
    return ev.RunInfo(
        run_id=s.run_id,
        thread_id=s.thread_id,
        status=run_status(s.status),
        stop_reason=stop_reason(s.metadata.stop_reason),
        steps_taken=s.metadata.steps_taken,
        max_steps=s.max_steps,
        final_reply=s.final_reply,
        next_node=s.next_node,
        checkpoint_id=s.checkpoint_id,
        owner=s.owner,
        created_at=_time(s, "created_at"),
        request_id=s.request_id,
    )


def thread(r: agent_pb2.GetThreadResponse) -> ev.Thread:
    return ev.Thread(
        thread_id=r.thread_id,
        user_id=r.user_id,
        messages=tuple(message(m) for m in r.messages),
        run=run_info(r.state) if r.HasField("state") else None,
        created_at=_time(r, "created_at"),
        updated_at=_time(r, "updated_at"),
    )


def checkpoints(r: agent_pb2.ListCheckpointsResponse) -> tuple[list[ev.Checkpoint], str]:
    """One page of checkpoints and the token of the next page ("" on the last)."""
    page = [
        ev.Checkpoint(
            checkpoint_id=c.checkpoint_id,
            run_id=c.run_id,
            index=c.index,
            node=c.node,
            next_node=c.next_node,
            step=c.step,
            message_count=c.message_count,
            delta_bytes=c.delta_bytes,
            created_at=_time(c, "created_at"),
        )
        for c in r.checkpoints
    ]
    return page, r.next_page_token


def threads_request(user_id: str, page_token: str, page_size: int) -> agent_pb2.ListThreadsRequest:
    return agent_pb2.ListThreadsRequest(user_id=user_id, page_token=page_token, page_size=page_size)


def threads(r: agent_pb2.ListThreadsResponse) -> tuple[list[ev.ThreadSummary], str]:
    """One page of threads (newest first) and the token of the next page ("" on the last)."""
    page = [
        ev.ThreadSummary(
            thread_id=t.thread_id,
            created_at=_time(t, "created_at"),
            updated_at=_time(t, "updated_at"),
            message_count=t.message_count,
            preview=t.preview,
            latest_run_id=t.latest_run_id,
            latest_run_status=run_status(t.latest_run_status) if t.latest_run_status else "",
        )
        for t in r.threads
    ]
    return page, r.next_page_token


def runs_request(thread_id: str, user_id: str, page_token: str, page_size: int) -> agent_pb2.ListRunsRequest:
    return agent_pb2.ListRunsRequest(
        thread_id=thread_id, user_id=user_id, page_token=page_token, page_size=page_size
    )


def runs(r: agent_pb2.ListRunsResponse) -> tuple[list[ev.RunInfo], str]:
    """One page of runs (newest first) and the token of the next page ("" on the last)."""
    return [run_info(s) for s in r.runs], r.next_page_token


def fork_request(
    thread_id: str, user_id: str, checkpoint_id: str, new_thread_id: str
) -> agent_pb2.ForkThreadRequest:
    return agent_pb2.ForkThreadRequest(
        thread_id=thread_id, user_id=user_id, checkpoint_id=checkpoint_id, new_thread_id=new_thread_id
    )


def memories(r: agent_pb2.ListMemoriesResponse) -> list[ev.Memory]:
    return [ev.Memory(m.memory_id, m.text, _time(m, "created_at")) for m in r.memories]


def _time(message: Any, name: str) -> datetime | None:
    if not message.HasField(name):
        return None
    stamp: Timestamp = getattr(message, name)
    return stamp.ToDatetime(tzinfo=UTC)
