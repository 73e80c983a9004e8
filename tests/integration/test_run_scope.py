"""A run on a continued thread is judged on its own messages, not on the runs before it."""

from __future__ import annotations

import pytest

from agentloop.scripted_model import Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2
from tests.support.stack import final_of, start_stack
from tests.support.tools import make_registry

pytestmark = pytest.mark.integration

SCRIPT = Script(
    scenarios=(
        Scenario(
            match="count",
            turns=(
                Turn(tool_calls=(ScriptedToolCall("count_once", {"key": "same"}),)),
                Turn(content="Counted."),
            ),
        ),
    )
)


async def test_the_previous_runs_round_is_not_a_repeat_of_this_one(database_url: str) -> None:
    registry, probe = make_registry()
    stack = await start_stack(SCRIPT, registry, database_url=database_url)
    try:
        first = await stack.run("count it", user_id="ana")
        second = await stack.run("count it again", thread_id=first[0].thread_id, user_id="ana")
    finally:
        await stack.close()
    for events in (first, second):
        final = final_of(events)
        assert (final.final_reply, final.metadata.stop_reason, final.metadata.tool_calls) == (
            "Counted.",
            agent_pb2.STOP_REASON_COMPLETED,
            1,
        )
    assert probe.finished["same"] == 2
