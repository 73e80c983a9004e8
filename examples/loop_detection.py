"""Loop detection: a model that repeats the same tool rounds is stopped (docs/loop-detection.md)."""

from __future__ import annotations

from _harness import Session, collect, run_example, show

from agentloop.scripted_model import Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2

ADD = ScriptedToolCall("add", {"a": 1, "b": 2})
CALC = ScriptedToolCall("calculator", {"expression": "3 * 3"})

# With --self-contained the model is scripted: "same again" calls add(1, 2) on every step;
# "ping pong" alternates add and calculator: A, B, A, B, ...
SCRIPT = Script(
    scenarios=(
        Scenario(match="^same again$", turns=(Turn(tool_calls=(ADD,)),)),
        Scenario(match="^ping pong$", turns=(Turn(tool_calls=(ADD,)), Turn(tool_calls=(CALC,))) * 4),
    )
)


async def run(session: Session, question: str, options: agent_pb2.RunOptions) -> None:
    request = agent_pb2.RunRequest(input=question, options=options)
    show(await collect(session.agent.Run(request, timeout=30)), only=("decision", "final"))


async def main(session: Session) -> None:
    print("1. the same call twice in a row (period 1), default settings:")
    await run(session, "same again", agent_pb2.RunOptions(max_steps=10))

    print("2. a cycle A, B, A, B (period 2), default settings:")
    await run(session, "ping pong", agent_pb2.RunOptions(max_steps=10))

    print("3. the same cycle with max_period=1: only immediate repeats count, the step limit ends it:")
    only_period_1 = agent_pb2.LoopDetection(max_period=1)
    await run(session, "ping pong", agent_pb2.RunOptions(max_steps=5, loop_detection=only_period_1))

    print("4. loop detection off:")
    off = agent_pb2.LoopDetection(disabled=True)
    await run(session, "same again", agent_pb2.RunOptions(max_steps=3, loop_detection=off))


if __name__ == "__main__":
    run_example(main, SCRIPT)
