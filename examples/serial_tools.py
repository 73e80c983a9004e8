"""Serial tools: run one round's tool calls one after the other, in the model's order
(docs/serial-tools.md)."""

from __future__ import annotations

from _harness import Session, collect, run_example

from agentloop.testing import Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2

# With --self-contained the model asks for two calls of `track` (a test tool that takes 50 ms)
# in one step. Against your own gateway, ask for anything that makes your model call two tools.
SCRIPT = Script(
    scenarios=(
        Scenario(
            match="",
            turns=(
                Turn(
                    tool_calls=(
                        ScriptedToolCall("track", {"label": "first"}),
                        ScriptedToolCall("track", {"label": "second"}),
                    )
                ),
                Turn(content="Tracked both."),
            ),
        ),
    )
)


async def run(session: Session, serial: bool) -> None:
    request = agent_pb2.RunRequest(
        input="Track two labels, first and second.", options=agent_pb2.RunOptions(serial_tools=serial)
    )
    events = await collect(session.agent.Run(request, timeout=30))
    order = []
    for event in events:
        kind = event.WhichOneof("event")
        if kind == "tool_start":
            order.append(f"start {event.tool_start.arguments_json}")
        elif kind == "tool_end":
            order.append(f"end {event.tool_end.result.content!r}")
    print("\n".join(f"  {line}" for line in order))


async def main(session: Session) -> None:
    print("1. default: the two calls run at the same time")
    await run(session, serial=False)
    print("2. serial_tools=True: the second starts when the first has finished")
    await run(session, serial=True)


if __name__ == "__main__":
    run_example(main, SCRIPT)
