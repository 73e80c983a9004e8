"""Human approval: calls to chosen tools pause the run until a person decides (docs/approval.md).
Written with agentloop.client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable

from _harness import Session, run_example, unique

from agentloop.client import (
    ClientError,
    Decision,
    Event,
    Final,
    Interrupt,
    PendingCall,
    ToolDecision,
    ToolFinished,
    approve,
    edit,
    reject,
)
from agentloop.testing import Scenario, Script, ScriptedToolCall, Turn

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
ANA = "ana"


def show(event: Event) -> None:
    """One line for the events this example is about."""
    if isinstance(event, Interrupt):
        calls = ", ".join(f"{c.name}({c.arguments_json}) id={c.tool_call_id}" for c in event.pending)
        print(f"  interrupt   {event.reason}: {calls}")
    elif isinstance(event, Decision):
        print(f"  decision    {event.kind}: {event.detail}")
    elif isinstance(event, ToolFinished):
        flag = f" [{event.error_kind}]" if event.is_error else ""
        print(f"  tool_end    {event.name} ->{flag} {event.content}")
    elif isinstance(event, Final):
        counts = f"steps_taken={event.steps_taken} llm_calls={event.llm_calls}"
        print(f"  final       {event.reply!r}\n              stop_reason={event.stop_reason} {counts}")


async def show_all(events: AsyncIterator[Event], only: tuple[type[Event], ...] = (Event,)) -> list[Event]:
    """Collect a stream's events and print those of the `only` types."""
    seen = [event async for event in events]
    for event in seen:
        if isinstance(event, only):
            show(event)
    return seen


async def start(session: Session, thread_id: str) -> Interrupt:
    """A run whose `add` call needs approval; returns its interrupt."""
    run = session.client.run(
        "Please add 1 and 2.", user_id=ANA, thread_id=thread_id, require_approval=["add"]
    )
    return next(e for e in await show_all(run) if isinstance(e, Interrupt))


async def decide(session: Session, paused: Interrupt, verdict: Callable[[PendingCall], ToolDecision]) -> None:
    """Resume the paused run with one decision per pending call."""
    decisions: Iterable[ToolDecision] = [verdict(call) for call in paused.pending]
    await show_all(session.client.resume(paused.run_id, decisions, user_id=ANA))


async def main(session: Session) -> None:
    print("1. the run pauses before add runs:")
    thread = unique("approval-1")
    paused = await start(session, thread)
    state = (await session.client.get_thread(thread, user_id=ANA)).run
    assert state is not None
    print(f"  get_thread: status={state.status} next_node={state.next_node}")
    try:
        await show_all(session.client.run("hi", user_id=ANA, thread_id=thread))
    except ClientError as exc:
        print(f"  a new run on that thread: {exc.code}")
    print("  APPROVE (from any client or gateway, at any later time):")
    await decide(session, paused, approve)

    print("2. EDIT runs the call with other arguments:")
    paused = await start(session, unique("approval-2"))
    await decide(session, paused, lambda call: edit(call, {"a": 40, "b": 2}))

    print("3. REJECT gives the model the reason instead of a result:")
    paused = await start(session, unique("approval-3"))
    await decide(session, paused, lambda call: reject(call, "not today"))

    print("4. Cancel ends a paused run:")
    paused = await start(session, unique("approval-4"))
    status = await session.client.cancel(paused.run_id, user_id=ANA)
    print(f"  cancel: {status}; the run's last events (watch):")
    watch = session.client.watch(paused.run_id, user_id=ANA, after_sequence=paused.sequence)
    await show_all(watch, only=(ToolFinished, Final))


if __name__ == "__main__":
    run_example(main, SCRIPT)
