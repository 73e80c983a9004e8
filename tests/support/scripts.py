"""Model scripts that several tests play."""

from __future__ import annotations

from agentloop.scripted_model import Scenario, ScriptedToolCall, Turn


def add_scenario(a: int, b: int, answer: str, match: str = "add") -> Scenario:
    """A question `match` finds: one tool step, add(a, b), then `answer` (``{{tool:add}}`` quotes it)."""
    return Scenario(
        match=match,
        turns=(
            Turn(tool_calls=(ScriptedToolCall("add", {"a": a, "b": b}),)),
            Turn(content=answer),
        ),
    )


ADD_SCENARIO = add_scenario(2, 3, "It is {{tool:add}}.")
