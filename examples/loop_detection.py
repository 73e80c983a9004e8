"""Loop detection: progress runs on, rounds that repeat without news are stopped (docs/loop-detection.md)."""

from __future__ import annotations

from _harness import Session, collect, run_example, show

from agentloop.testing import Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2


def call(name: str, arguments: dict[str, object] | str) -> Turn:
    return Turn(tool_calls=(ScriptedToolCall(name, arguments),))


ADD = call("add", {"a": 1, "b": 2})
CALC = call("calculator", {"expression": "3 * 3"})

# With --self-contained the model is scripted. "ten keys" looks up a different key each step;
# "same again" calls add(1, 2) every step, with its arguments written differently the second
# time; "ping pong" alternates add and calculator: A, B, A, B, ...
SCRIPT = Script(
    scenarios=(
        Scenario(
            match="^ten keys$",
            turns=(
                *(call("lookup", {"key": f"{i}-0"}) for i in range(10)),
                Turn(content="Last: {{last_tool}}"),
            ),
        ),
        Scenario(match="^same again$", turns=(ADD, call("add", '{"b": 2, "a": 1.0}'))),
        Scenario(match="^ping pong$", turns=(ADD, CALC) * 4),
        Scenario(
            match="^wait for nightly$",
            turns=(*(call("poll_job", {"job": "nightly"}),) * 3, Turn("{{last_tool}}")),
        ),
        Scenario(match="^wait for stuck$", turns=(call("poll_job", {"job": "stuck"}),)),
    )
)


async def run(session: Session, question: str, options: agent_pb2.RunOptions) -> None:
    request = agent_pb2.RunRequest(input=question, options=options)
    show(await collect(session.agent.Run(request, timeout=30)), only=("decision", "final"))


async def main(session: Session) -> None:
    print("1. ten lookups of different keys, default settings (progress, runs to the end):")
    await run(session, "ten keys", agent_pb2.RunOptions(max_steps=20))

    print("2. the same call twice, its arguments reordered and 2 written 2.0 (period 1):")
    await run(session, "same again", agent_pb2.RunOptions(max_steps=10))

    print("3. a cycle A, B, A, B (period 2):")
    await run(session, "ping pong", agent_pb2.RunOptions(max_steps=10))

    print("4. a declared poll tool: the job finishes on the third poll (expected repeats):")
    await run(session, "wait for nightly", agent_pb2.RunOptions(max_steps=10))

    print("5. the same poll on a job that never moves: stopped past the declared budget of 3:")
    await run(session, "wait for stuck", agent_pb2.RunOptions(max_steps=10))

    print("6. the cycle with max_period=1: only immediate repeats count, the step limit ends it:")
    only_period_1 = agent_pb2.LoopDetection(max_period=1)
    await run(session, "ping pong", agent_pb2.RunOptions(max_steps=5, loop_detection=only_period_1))

    print("7. loop detection off:")
    off = agent_pb2.LoopDetection(disabled=True)
    await run(session, "same again", agent_pb2.RunOptions(max_steps=3, loop_detection=off))


if __name__ == "__main__":
    run_example(main, SCRIPT)
