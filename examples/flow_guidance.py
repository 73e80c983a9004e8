"""Flow guidance: tools' next-step rules become one-time hints for the model (docs/flow-guidance.md)."""

from __future__ import annotations

from _harness import Session, collect, run_example, show, system_messages_sent, unique

from agentloop.testing import Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2

QUERY = "SELECT name, country FROM customers ORDER BY id LIMIT 3"


def call(name: str, **arguments: str) -> Turn:
    return Turn(tool_calls=(ScriptedToolCall(name, arguments),))


# The text-to-SQL flow the built-in SQL tools describe: describe a table, validate a query, run
# it, answer. "bad sql" validates a query over a table that does not exist.
SCRIPT = Script(
    scenarios=(
        Scenario(
            match="customers",
            turns=(
                call("sql_describe_table", table="customers"),
                call("sql_validate", query=QUERY),
                call("sql_query", query=QUERY),
                Turn(content="The first customers: {{tool:sql_query}}"),
            ),
        ),
        Scenario(
            match="^bad sql",
            turns=(call("sql_validate", query="SELECT nope FROM nowhere"), Turn(content="It is not valid.")),
        ),
    )
)


async def main(session: Session) -> None:
    print("1. the SQL flow, with guidance (the default):")
    request = agent_pb2.RunRequest(
        input="Who are our first three customers?", user_id="ana", thread_id=unique("flow-demo")
    )
    show(await collect(session.agent.Run(request, timeout=30)), only=("tool_start", "decision", "final"))
    if session.model is not None:
        for i in range(len(session.model.requests)):
            hints = [t for t in system_messages_sent(session.model, i) if t.startswith("Suggested")]
            print(f"  model call {i + 1} got: {hints[0] if hints else '(no hint)'}")
    thread = await session.agent.GetThread(
        agent_pb2.GetThreadRequest(thread_id=unique("flow-demo"), user_id="ana"), timeout=10
    )
    stored = sum("Suggested next step" in m.content for m in thread.messages)
    print(f"  messages in the thread: {len(thread.messages)}, of which hints: {stored}")

    print("2. a query that fails validation:")
    request = agent_pb2.RunRequest(input="bad sql")
    show(await collect(session.agent.Run(request, timeout=30)), only=("tool_end", "decision"))

    print("3. the same with disable_flow_guidance=True:")
    request = agent_pb2.RunRequest(input="bad sql", options=agent_pb2.RunOptions(disable_flow_guidance=True))
    show(await collect(session.agent.Run(request, timeout=30)), only=("tool_end", "decision"))


if __name__ == "__main__":
    run_example(main, SCRIPT)
