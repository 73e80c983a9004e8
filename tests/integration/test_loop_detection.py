"""Loop detection through the real services: progress runs to completion, true loops stop with a reason.

The scripted model plays traces from both halves of the loop corpus
(bench/loop_corpus.json) against real tools over gRPC; the gateway decides
with default options unless a test says otherwise.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator

import pytest

from agentloop.kernel.loop_policy import LoopPolicy
from agentloop.scripted_model import Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2
from tests.support.stack import Stack, final_of, start_stack
from tests.support.tools import make_registry
from tool_svc import ToolRegistry, tool

pytestmark = pytest.mark.integration

POLL_BUDGET = 5
DEEP_ARGS = '{"a":' * 2000 + "1" + "}" * 2000


def call(name: str, arguments: dict[str, object] | str) -> Turn:
    return Turn(tool_calls=(ScriptedToolCall(name, arguments),))


def scenario(match: str, *turns: Turn) -> Scenario:
    return Scenario(match=f"^{match}$", turns=turns)


SCRIPT = Script(
    scenarios=(
        # --- progress ---
        scenario(
            "ten keys",
            *(call("lookup", {"key": f"{i}-0"}) for i in range(10)),
            Turn(content="Done: {{last_tool}}"),
        ),
        scenario(
            "poll until done", *(call("poll_job", {"job": "build-1"}),) * 5, Turn(content="{{last_tool}}")
        ),
        scenario(
            "corrected retry",
            call("sql_query", {"query": "SELECT nope FROM customers"}),
            call("sql_query", {"query": "SELECT name FROM customers LIMIT 1"}),
            Turn(content="{{last_tool}}"),
        ),
        scenario("deep once", call("add", DEEP_ARGS), Turn(content="could not add")),
        # --- loops ---
        scenario("reformatted", call("add", '{"a": 1, "b": 2}'), call("add", '{ "b":2,\n "a":1.0 }')),
        scenario("cycle", *(call("lookup", {"key": "x"}), call("add", {"a": 1, "b": 2})) * 4),
        scenario("same error", call("explode", {"reason": "disk full"})),
        scenario("poll forever", call("poll_job", {"job": "stuck"})),
        scenario("deep again", call("add", DEEP_ARGS)),
        scenario("same add", call("add", {"a": 1, "b": 2})),
    )
)


def loop_registry() -> ToolRegistry:
    """The test tools plus a lookup tool and a declared poll tool whose jobs finish or never do."""
    registry, _probe = make_registry()
    polls: Counter[str] = Counter()

    @tool
    def lookup(key: str) -> str:
        """Look a key up.

        Args:
            key: which key.
        """
        return "nothing under x" if key == "x" else f"value-for-{key}"

    @tool(loop_policy=LoopPolicy(repeat_budget=POLL_BUDGET, volatile_result_fields=("checked_at",)))
    def poll_job(job: str) -> str:
        """The state of a job; 'build-1' finishes on its fifth poll, 'stuck' never does.

        Args:
            job: the job id.
        """
        polls[job] += 1
        done = job == "build-1" and polls[job] >= 5
        return json.dumps({"job": job, "state": "done" if done else "pending", "checked_at": polls[job]})

    registry.register(lookup)
    registry.register(poll_job)
    return registry


@pytest.fixture
async def stack() -> AsyncIterator[Stack]:
    stack = await start_stack(SCRIPT, loop_registry())
    try:
        yield stack
    finally:
        await stack.close()


def loop_decisions(events: list[agent_pb2.RunEvent]) -> list[str]:
    return [
        e.decision.detail
        for e in events
        if e.WhichOneof("event") == "decision" and e.decision.kind == agent_pb2.DECISION_KIND_LOOP_DETECTED
    ]


async def test_ten_distinct_keys_run_to_completion_with_default_options(stack: Stack) -> None:
    events = await stack.run("ten keys", max_steps=25)
    final = final_of(events)
    assert final.metadata.stop_reason == agent_pb2.STOP_REASON_COMPLETED
    assert final.metadata.tool_calls == 10
    assert final.final_reply == "Done: value-for-9-0"
    assert loop_decisions(events) == []


async def test_a_declared_poll_runs_until_its_job_is_done(stack: Stack) -> None:
    final = final_of(await stack.run("poll until done", max_steps=25))
    assert final.metadata.stop_reason == agent_pb2.STOP_REASON_COMPLETED
    assert final.metadata.tool_calls == 5
    assert '"state": "done"' in final.final_reply


async def test_a_retry_with_corrected_arguments_is_progress(stack: Stack) -> None:
    final = final_of(await stack.run("corrected retry", max_steps=25))
    assert final.metadata.stop_reason == agent_pb2.STOP_REASON_COMPLETED
    assert final.metadata.tool_calls == 2


async def test_a_deeply_nested_argument_gets_an_error_result_and_the_run_completes(stack: Stack) -> None:
    final = final_of(await stack.run("deep once", max_steps=25))
    assert final.metadata.stop_reason == agent_pb2.STOP_REASON_COMPLETED
    assert final.final_reply == "could not add"
    assert final.run_messages[-2].content.startswith("ERROR (malformed_arguments)")


async def test_the_same_call_reformatted_is_stopped_and_the_decision_says_why(stack: Stack) -> None:
    events = await stack.run("reformatted", max_steps=10)
    final = final_of(events)
    assert final.metadata.stop_reason == agent_pb2.STOP_REASON_LOOP_DETECTED
    assert final.metadata.steps_taken == 2
    detail = (
        "the same tool calls repeated twice in a row with the same results: "
        "round 2 repeats round 1 (add: same arguments, same result)"
    )
    assert loop_decisions(events) == [detail]
    assert final.final_reply.startswith(f"I stopped because {detail}.")


async def test_an_a_b_cycle_is_stopped_after_one_repeat(stack: Stack) -> None:
    events = await stack.run("cycle", max_steps=10)
    assert final_of(events).metadata.stop_reason == agent_pb2.STOP_REASON_LOOP_DETECTED
    assert final_of(events).metadata.steps_taken == 4
    assert loop_decisions(events) == [
        "the same tool calls repeated in a cycle of 2 rounds (lookup → add), twice with the same results: "
        "rounds 3–4 repeat rounds 1–2 (lookup, add: same arguments, same results)"
    ]


async def test_an_error_retried_unchanged_is_stopped(stack: Stack) -> None:
    events = await stack.run("same error", max_steps=10)
    assert final_of(events).metadata.stop_reason == agent_pb2.STOP_REASON_LOOP_DETECTED
    assert final_of(events).metadata.steps_taken == 2
    assert loop_decisions(events) == [
        "the same tool calls repeated twice in a row with the same results: "
        "round 2 repeats round 1 (explode: same arguments, same error)"
    ]


async def test_a_poll_that_never_changes_is_stopped_past_its_declared_budget(stack: Stack) -> None:
    events = await stack.run("poll forever", max_steps=20)
    final = final_of(events)
    assert final.metadata.stop_reason == agent_pb2.STOP_REASON_LOOP_DETECTED
    assert final.metadata.steps_taken == POLL_BUDGET + 2
    assert loop_decisions(events) == [
        f"the same tool calls repeated {POLL_BUDGET + 2} times in a row with the same results: "
        f"rounds 2–{POLL_BUDGET + 2} repeat round 1 (poll_job: same arguments, same result, "
        f"ignoring declared fields checked_at; at most {POLL_BUDGET} repeats are expected)"
    ]


async def test_a_deeply_nested_argument_repeated_is_a_loop_not_an_internal_error(stack: Stack) -> None:
    events = await stack.run("deep again", max_steps=10)
    assert final_of(events).metadata.stop_reason == agent_pb2.STOP_REASON_LOOP_DETECTED
    assert final_of(events).metadata.steps_taken == 2


async def test_the_gateway_setting_gives_an_undecorated_tool_a_budget() -> None:
    overrides = {"loop_policies": (("add", LoopPolicy(repeat_budget=2)),)}
    stack = await start_stack(SCRIPT, loop_registry(), gateway_overrides=overrides)
    try:
        events = await stack.run("same add", max_steps=10)
    finally:
        await stack.close()
    assert final_of(events).metadata.stop_reason == agent_pb2.STOP_REASON_LOOP_DETECTED
    assert final_of(events).metadata.steps_taken == 4
    assert "at most 2 repeats are expected" in loop_decisions(events)[0]
