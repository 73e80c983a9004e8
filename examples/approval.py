"""Human approval: calls to chosen tools pause the run until a person decides (docs/approval.md)."""

from __future__ import annotations

from typing import TypeAlias

from _harness import RpcError, Session, collect, run_example, show, unique

from agentloop.scripted_model import Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2, agent_pb2_grpc

Verdict: TypeAlias = agent_pb2.ApprovalDecision.Verdict.ValueType
APPROVE, REJECT, EDIT = (
    agent_pb2.ApprovalDecision.VERDICT_APPROVE,
    agent_pb2.ApprovalDecision.VERDICT_REJECT,
    agent_pb2.ApprovalDecision.VERDICT_EDIT,
)

# With --self-contained the model calls add(1, 2) and then reports the tool's result.
SCRIPT = Script(
    scenarios=(
        Scenario(
            match="add",
            turns=(
                Turn(tool_calls=(ScriptedToolCall("add", {"a": 1, "b": 2}),)),
                Turn(content="Result: {{tool:add}}"),
            ),
        ),
    )
)


async def start(session: Session, thread_id: str) -> agent_pb2.RunEvent:
    """A run whose `add` call needs approval; returns its interrupt event."""
    request = agent_pb2.RunRequest(
        input="Please add 1 and 2.",
        user_id="ana",
        thread_id=thread_id,
        options=agent_pb2.RunOptions(require_approval=["add"]),
    )
    events = await collect(session.agent.Run(request, timeout=30))
    show(events, only=("interrupt", "decision", "final"))
    return next(e for e in events if e.WhichOneof("event") == "interrupt")


async def decide(
    agent: agent_pb2_grpc.AgentStub, paused: agent_pb2.RunEvent, verdict: Verdict, **extra: str
) -> None:
    """Resume the paused run with one decision per pending call."""
    decisions = [
        agent_pb2.ApprovalDecision(tool_call_id=call.id, verdict=verdict, **extra)
        for call in paused.interrupt.pending
    ]
    request = agent_pb2.ResumeRequest(run_id=paused.run_id, user_id="ana", decisions=decisions)
    show(await collect(agent.Resume(request, timeout=30)), only=("tool_end", "final"))


async def main(session: Session) -> None:
    print("1. the run pauses before add runs:")
    paused = await start(session, unique("approval-1"))
    thread = await session.agent.GetThread(
        agent_pb2.GetThreadRequest(thread_id=unique("approval-1"), user_id="ana"), timeout=10
    )
    status = agent_pb2.RunStatus.Name(thread.state.status)
    print(f"  GetThread: status={status} next_node={thread.state.next_node}")
    try:
        another = agent_pb2.RunRequest(input="hi", user_id="ana", thread_id=unique("approval-1"))
        await collect(session.agent.Run(another, timeout=30))
    except RpcError as exc:
        print(f"  a new run on that thread: {exc.code().name}")
    print("  APPROVE (from any client or gateway, at any later time):")
    await decide(session.agent, paused, APPROVE)

    print("2. EDIT runs the call with other arguments:")
    paused = await start(session, unique("approval-2"))
    await decide(session.agent, paused, EDIT, arguments_json='{"a": 40, "b": 2}')

    print("3. REJECT gives the model the reason instead of a result:")
    paused = await start(session, unique("approval-3"))
    await decide(session.agent, paused, REJECT, reason="not today")

    print("4. Cancel ends a paused run:")
    paused = await start(session, unique("approval-4"))
    cancel = agent_pb2.CancelRequest(run_id=paused.run_id, user_id="ana")
    reply = await session.agent.Cancel(cancel, timeout=30)
    print(f"  Cancel: {agent_pb2.RunStatus.Name(reply.status)}; the run's last events (Watch):")
    watch = agent_pb2.WatchRequest(run_id=paused.run_id, user_id="ana", after_sequence=paused.sequence)
    show(await collect(session.agent.Watch(watch, timeout=30)), only=("tool_end", "final"))


if __name__ == "__main__":
    run_example(main, SCRIPT)
