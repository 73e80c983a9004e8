"""serial_tools: clients see each call's tool_start and tool_end strictly in turn (start, end, start, end)."""

from __future__ import annotations

import pytest

from agentloop.scripted_model import Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2
from tests.support.stack import final_of, start_stack
from tests.support.tools import make_registry

pytestmark = pytest.mark.integration

LABELS = ["first", "second", "third"]
SCRIPT = Script(
    scenarios=(
        Scenario(
            match="^three tracked$",
            turns=(
                Turn(tool_calls=tuple(ScriptedToolCall("track", {"label": label}) for label in LABELS)),
                Turn(content="tracked all"),
            ),
        ),
    )
)


def tool_events(events: list[agent_pb2.RunEvent]) -> list[tuple[str, str]]:
    out = []
    for event in events:
        kind = event.WhichOneof("event")
        if kind == "tool_start":
            out.append(("start", event.tool_start.tool_call_id))
        elif kind == "tool_end":
            out.append(("end", event.tool_end.tool_call_id))
    return out


async def test_serial_rounds_emit_start_end_pairs_in_call_order(database_url: str) -> None:
    registry, probe = make_registry()
    stack = await start_stack(SCRIPT, registry, database_url=database_url)
    try:
        for _ in range(3):  # the race it guards against does not show every time
            probe.order = []
            events = await stack.run("three tracked", serial_tools=True)
            assert final_of(events).final_reply == "tracked all"
            assert probe.order == LABELS
            ids = [e.tool_start.tool_call_id for e in events if e.WhichOneof("event") == "tool_start"]
            assert len(ids) == len(LABELS)
            expected = [(kind, call_id) for call_id in ids for kind in ("start", "end")]
            assert tool_events(events) == expected
            # The calls ran in the order the model wrote them.
            starts = [e.tool_start.arguments_json for e in events if e.WhichOneof("event") == "tool_start"]
            assert [label in args for label, args in zip(LABELS, starts, strict=True)] == [True] * 3
    finally:
        await stack.close()
