"""Every tool call the model asks for runs and gets its own result, whatever ids the model gives it."""

from __future__ import annotations

import pytest

from agentloop.scripted_model import Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2, common_pb2, tools_pb2
from gateway.loop.call_ids import MAX_CALL_ID_CHARS
from tests.support.stack import final_of, start_stack
from tests.support.tools import make_registry

pytestmark = pytest.mark.integration


def times_ten(n: int, call_id: str) -> ScriptedToolCall:
    return ScriptedToolCall("calculator", {"expression": f"{n} * 10"}, id=call_id)


SCRIPT = Script(
    scenarios=(
        # An endpoint that numbers ids from call_0 at every step.
        Scenario(
            match="across steps",
            turns=(
                Turn(tool_calls=(times_ten(0, "call_0"),)),
                Turn(tool_calls=(times_ten(1, "call_0"),)),
                Turn(tool_calls=(times_ten(2, "call_0"),)),
                Turn(content="done"),
            ),
        ),
        # A model that gives two calls of one reply the same id, or none at all.
        Scenario(
            match="within a step",
            turns=(
                Turn(
                    tool_calls=(times_ten(3, "dup"), times_ten(4, "dup"), times_ten(5, ""), times_ten(6, ""))
                ),
                Turn(content="done"),
            ),
        ),
        # Ids a database cannot key on.
        Scenario(
            match="unstorable",
            turns=(
                Turn(
                    tool_calls=(
                        times_ten(7, "a\x00b"),
                        times_ten(8, "x" * (MAX_CALL_ID_CHARS + 1)),
                        times_ten(9, "tab\there"),
                    )
                ),
                Turn(content="done"),
            ),
        ),
    )
)


def tool_events(events: list[agent_pb2.RunEvent]) -> tuple[list[str], list[common_pb2.ToolResult]]:
    starts = [e.tool_start.tool_call_id for e in events if e.WhichOneof("event") == "tool_start"]
    ends = [e.tool_end.result for e in events if e.WhichOneof("event") == "tool_end"]
    return starts, ends


async def _check(database_url: str, question: str, expected: list[str]) -> None:
    stack = await start_stack(SCRIPT, database_url=database_url)
    try:
        for thread in ("t1", "t1"):  # a second run in the same thread reuses every id again
            # Loop detection off: the similar calculator rounds are the point here, not a loop.
            events = await stack.run(
                question,
                thread_id=thread,
                user_id="ana",
                loop_detection=agent_pb2.LoopDetection(disabled=True),
            )
            assert final_of(events).final_reply == "done"
            starts, ends = tool_events(events)
            assert sorted(r.content for r in ends) == expected
            assert not any(r.is_error for r in ends)
            ids = [r.tool_call_id for r in ends]
            assert sorted(ids) == sorted(starts)
            assert len(set(ids)) == len(ids)
        thread_state = await stack.agent.GetThread(agent_pb2.GetThreadRequest(thread_id="t1", user_id="ana"))
        messages = thread_state.messages
        call_ids = [c.id for m in messages for c in m.tool_calls]
        answered = [m.tool_call_id for m in messages if m.role == common_pb2.ROLE_TOOL]
        assert len(call_ids) == 2 * len(expected)
        assert len(set(call_ids)) == len(call_ids)
        assert sorted(answered) == sorted(call_ids)
        assert all(0 < len(i) <= MAX_CALL_ID_CHARS and i.isprintable() for i in call_ids)
    finally:
        await stack.close()


async def test_an_id_reused_across_steps_still_runs_each_call(database_url: str) -> None:
    await _check(database_url, "across steps", ["0", "10", "20"])


async def test_repeated_and_missing_ids_within_a_step_each_get_their_own_result(database_url: str) -> None:
    await _check(database_url, "within a step", ["30", "40", "50", "60"])


async def test_unstorable_ids_are_replaced(database_url: str) -> None:
    await _check(database_url, "unstorable", ["70", "80", "90"])


async def test_the_tool_service_memo_matches_only_the_same_call_of_the_same_step() -> None:
    registry, probe = make_registry()
    stack = await start_stack(SCRIPT, registry)
    try:

        async def execute(scope: str, call_id: str, a: int) -> str:
            call = common_pb2.ToolCall(id=call_id, name="add", arguments_json=f'{{"a": {a}, "b": 0}}')
            request = tools_pb2.ExecuteRequest(calls=[call], idempotency_scope=scope)
            events = [e async for e in stack.tools_stub.Execute(request, timeout=10)]
            return str(events[-1].finished.content)

        assert await execute("run-1/0", "call_0", 1) == "1"
        # A re-issue of the same call (a gateway retrying after a crash) is answered from the memo...
        assert await execute("run-1/0", "call_0", 1) == "1"
        assert probe.calls["add"] == 1
        # ...but another step, or other arguments under the same id, is a new call that runs.
        assert await execute("run-1/1", "call_0", 2) == "2"
        assert await execute("run-1/1", "call_0", 3) == "3"
        assert probe.calls["add"] == 3
    finally:
        await stack.close()
