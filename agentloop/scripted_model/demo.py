"""The script the CLI plays when given none, matching the questions used in the README and demos.

It shows the two behaviours people most want to see from an agent runtime: parallel tool calls
in one step, and a multi-step tool chain whose final answer quotes a tool's result.
"""

from __future__ import annotations

from agentloop.scripted_model.script import Scenario, Script, ScriptedToolCall, Turn

DEMO_QUESTION = "What is 1234 * 5678, and what time is it in UTC?"
DEMO_SQL_QUESTION = "Which tables are in the database? Show me the first customers."


def demo_script() -> Script:
    parallel_tools = Scenario(
        name="demo-parallel-tools",
        match=r"1234|time",
        turns=(
            Turn(
                reasoning="I need arithmetic and the clock; both tools can run at once.",
                tool_calls=(
                    ScriptedToolCall("calculator", {"expression": "1234 * 5678"}),
                    ScriptedToolCall("current_time", {"timezone": "UTC"}),
                ),
            ),
            Turn(
                content=(
                    "1234 × 5678 = {{tool:calculator}}, and the current time in UTC is "
                    "{{tool:current_time}}. I ran both tools in parallel in a single step."
                )
            ),
        ),
    )
    sql = Scenario(
        name="demo-sql",
        match=r"tables|database|customers|orders",
        turns=(
            Turn(
                reasoning="First I need to know which tables exist.",
                tool_calls=(ScriptedToolCall("sql_list_tables", {}),),
            ),
            Turn(
                reasoning="The customers table has what was asked for.",
                tool_calls=(
                    ScriptedToolCall(
                        "sql_query", {"query": "SELECT name, country FROM customers ORDER BY name LIMIT 5"}
                    ),
                ),
            ),
            Turn(content="Here are the first customers: {{tool:sql_query}}"),
        ),
    )
    return Script(scenarios=(parallel_tools, sql))
