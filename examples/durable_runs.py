"""Durable runs: threads, checkpoints, Watch after a disconnect, concurrency policies, Cancel
(docs/durable-runs.md)."""

from __future__ import annotations

import asyncio

from _harness import RpcError, Session, collect, run_example, show, unique

from agentloop.testing import Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2

ANA = "ana"
T1, T2, T3 = unique("t1"), unique("t2"), unique("t3")  # threads of this run only


def sleep_for(seconds: float) -> Turn:
    return Turn(tool_calls=(ScriptedToolCall("sleep_for", {"seconds": seconds}),))


# With --self-contained: "nap" calls sleep_for(1) (a test tool), "long nap" sleep_for(30);
# anything else is answered at once.
SCRIPT = Script(
    scenarios=(
        Scenario(match="^nap", turns=(sleep_for(1), Turn(content="Rested: {{tool:sleep_for}}"))),
        Scenario(match="^long nap", turns=(sleep_for(30), Turn(content="Rested a lot."))),
        Scenario(match="", turns=(Turn(content="Reply to: {{user}}"),)),
    )
)


def status_name(status: agent_pb2.RunStatus.ValueType) -> str:
    return agent_pb2.RunStatus.Name(status).removeprefix("RUN_STATUS_")


async def start_and_leave(session: Session, request: agent_pb2.RunRequest) -> agent_pb2.RunEvent:
    """Start a run, read it until its first tool starts, then drop the stream; returns that event."""
    call = session.agent.Run(request, timeout=60)
    async for response in call:
        event: agent_pb2.RunEvent = response.event
        if event.WhichOneof("event") == "tool_start":
            call.cancel()
            return event
    raise RuntimeError("the run started no tool")


async def wait_until_ended(session: Session, thread_id: str) -> agent_pb2.GetThreadResponse:
    request = agent_pb2.GetThreadRequest(thread_id=thread_id, user_id=ANA)
    while True:
        thread: agent_pb2.GetThreadResponse = await session.agent.GetThread(request, timeout=10)
        if thread.state.status not in (agent_pb2.RUN_STATUS_QUEUED, agent_pb2.RUN_STATUS_RUNNING):
            return thread
        await asyncio.sleep(0.1)


async def main(session: Session) -> None:
    print("1. the client leaves mid-run; the run goes on, and Watch picks it up again:")
    seen = await start_and_leave(session, agent_pb2.RunRequest(input="nap", user_id=ANA, thread_id=T1))
    print(f"  left after event {seen.sequence} (tool_start {seen.tool_start.name})")
    watch = agent_pb2.WatchRequest(run_id=seen.run_id, user_id=ANA, after_sequence=seen.sequence)
    show(await collect(session.agent.Watch(watch, timeout=30)), only=("tool_end", "final"))

    print("2. the thread and its checkpoints:")
    pages = await session.agent.ListCheckpoints(
        agent_pb2.ListCheckpointsRequest(thread_id=T1, user_id=ANA), timeout=10
    )
    print(f"  checkpoints: {' -> '.join(c.node for c in pages.checkpoints)}")
    after_tools = next(c for c in pages.checkpoints if c.node == "tools")
    as_of = await session.agent.GetThread(
        agent_pb2.GetThreadRequest(thread_id=T1, user_id=ANA, checkpoint_id=after_tools.checkpoint_id)
    )
    where = f"{after_tools.node} (step {after_tools.step})"
    print(f"  as of {where}: {len(as_of.messages)} messages, next node {as_of.state.next_node}")
    again = agent_pb2.RunRequest(input="and now?", user_id=ANA, thread_id=T1)
    show(await collect(session.agent.Run(again, timeout=30)), only=("final",))
    thread = await session.agent.GetThread(agent_pb2.GetThreadRequest(thread_id=T1, user_id=ANA))
    print(f"  GetThread: {len(thread.messages)} messages, latest run {status_name(thread.state.status)}")

    print("3. a second run on a busy thread: REJECT (the default), then ENQUEUE:")
    busy = await start_and_leave(session, agent_pb2.RunRequest(input="long nap", user_id=ANA, thread_id=T2))
    try:
        await collect(session.agent.Run(agent_pb2.RunRequest(input="hello", user_id=ANA, thread_id=T2)))
    except RpcError as exc:
        print(f"  REJECT: {exc.code().name}: {exc.details()}")
    enqueue = agent_pb2.RunOptions(concurrency=agent_pb2.CONCURRENCY_POLICY_ENQUEUE)
    queued = asyncio.create_task(
        collect(
            session.agent.Run(agent_pb2.RunRequest(input="hello", user_id=ANA, thread_id=T2, options=enqueue))
        )
    )
    await asyncio.sleep(0.5)
    print(f"  ENQUEUE: still waiting = {not queued.done()}")
    cancel = await session.agent.Cancel(agent_pb2.CancelRequest(run_id=busy.run_id, user_id=ANA), timeout=30)
    print(f"  Cancel of the busy run: {status_name(cancel.status)}")
    show(await queued, only=("final",))

    print("4. cancel_on_disconnect=True: leaving cancels the run:")
    leave = agent_pb2.RunOptions(cancel_on_disconnect=True)
    await start_and_leave(
        session, agent_pb2.RunRequest(input="long nap", user_id=ANA, thread_id=T3, options=leave)
    )
    thread = await wait_until_ended(session, T3)
    status = status_name(thread.state.status)
    reason = agent_pb2.StopReason.Name(thread.state.metadata.stop_reason).removeprefix("STOP_REASON_").lower()
    print(f"  GetThread: latest run {status}, stop_reason={reason}")

    print("5. Resume is for interrupted runs only:")
    try:
        await collect(session.agent.Resume(agent_pb2.ResumeRequest(run_id=seen.run_id, user_id=ANA)))
    except RpcError as exc:
        print(f"  {exc.code().name}: {(exc.details() or '').replace(seen.run_id, '<run_id>')}")


if __name__ == "__main__":
    run_example(main, SCRIPT)
