"""Remaining steps: at max_steps the model answers without tools (docs/remaining-steps.md)."""

from __future__ import annotations

from _harness import Session, collect, run_example, show

from agentloop.testing import Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2


def calc(expression: str) -> Turn:
    return Turn(tool_calls=(ScriptedToolCall("calculator", {"expression": expression}),))


# A model that would keep computing (different sums, so no loop is detected). When a call offers
# no tools, a well-behaved model answers from what it has ("patient"); a stubborn one asks for
# tools anyway ("stubborn", which ignores tool_choice=none).
STEPS = (calc("1 + 1"), calc("2 + 2"), calc("3 + 3"), calc("4 + 4"), Turn(content="Done: 2, 4, 6, 8."))
SCRIPT = Script(
    scenarios=(
        Scenario(
            match="^patient",
            turns=STEPS,
            final_text="So far: 1 + 1 = 2 and 2 + 2 = 4; I ran out of steps for the rest.",
        ),
        Scenario(
            match="^stubborn",
            turns=tuple(Turn(content="Still computing.", tool_calls=t.tool_calls) for t in STEPS[:-1]),
            ignore_tool_choice=True,
        ),
    )
)


async def run(session: Session, question: str, max_steps: int) -> None:
    if session.model is not None:
        session.model.clear_requests()
    request = agent_pb2.RunRequest(input=question, options=agent_pb2.RunOptions(max_steps=max_steps))
    events = await collect(session.agent.Run(request, timeout=30))
    show(events, only=("tool_start", "decision", "final"))
    if session.model is not None:
        choices = [str(r.get("tool_choice", "auto")) for r in session.model.requests]
        print(f"  tool_choice of each model call: {', '.join(choices)}")


async def main(session: Session) -> None:
    print("1. four sums wanted, max_steps=2: the third call has no tools and the model answers:")
    await run(session, "patient: add up the first four even numbers", 2)
    print("2. the same, but the model asks for tools at the limit anyway:")
    await run(session, "stubborn: add up the first four even numbers", 2)
    print("3. enough steps:")
    await run(session, "patient: add up the first four even numbers", 10)


if __name__ == "__main__":
    run_example(main, SCRIPT)
