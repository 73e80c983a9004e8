"""Tool results are bounded in bytes: an oversized result is an error the model reads, never a failed run."""

from __future__ import annotations

import json

import grpc
import pytest

from agentloop.kernel.serving import CHANNEL_OPTIONS
from agentloop.scripted_model import Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2, agent_pb2_grpc, common_pb2
from tests.support.stack import final_of, start_stack
from tests.support.tools import make_registry
from tool_svc import ToolRegistry
from tool_svc.executor import DEFAULT_MAX_RESULT_BYTES, MAX_BATCH_RESULT_BYTES

pytestmark = pytest.mark.integration

# Ten columns of 1 MB strings over a hundred rows: 1 GB if fetched whole.
WIDE_QUERY = (
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 100) SELECT "
    + ", ".join(f"printf('%.*c', 999999, 'x') AS c{i}" for i in range(10))
    + " FROM r"
)
MANY = 40  # calls of ~1 MB each: 40 MB, over the 32 MiB gRPC message limit together


def registry() -> ToolRegistry:
    tools, _ = make_registry()

    def blob(size: int) -> str:
        """A string of ``size`` bytes.

        Args:
            size: how many bytes.
        """
        return "x" * size

    tools.register(blob)
    return tools


def turn_then_done(*calls: ScriptedToolCall) -> tuple[Turn, ...]:
    return (Turn(tool_calls=calls), Turn(content="done"))


SCRIPT = Script(
    scenarios=(
        Scenario(
            match="^wide query$", turns=turn_then_done(ScriptedToolCall("sql_query", {"query": WIDE_QUERY}))
        ),
        Scenario(
            match="^one big$", turns=turn_then_done(ScriptedToolCall("blob", {"size": 3 * 1024 * 1024}))
        ),
        Scenario(
            match="^many big$",
            turns=turn_then_done(*(ScriptedToolCall("blob", {"size": 1_000_000}) for _ in range(MANY))),
        ),
    )
)


def results(events: list[agent_pb2.RunEvent]) -> list[common_pb2.ToolResult]:
    return [e.tool_end.result for e in events if e.WhichOneof("event") == "tool_end"]


async def test_a_query_of_huge_rows_returns_a_bounded_result() -> None:
    stack = await start_stack(SCRIPT, registry())
    try:
        events = await stack.run("wide query", deadline_s=60)
        assert final_of(events).final_reply == "done"
        (result,) = results(events)
        assert not result.is_error, result.content
        assert len(result.content.encode()) < DEFAULT_MAX_RESULT_BYTES
        rows = json.loads(result.content)
        assert rows["truncated"] is True
        assert "select fewer or narrower columns" in rows["note"]
        assert all(cell.endswith("[cut at 4000 characters]") for row in rows["rows"] for cell in row)
    finally:
        await stack.close()


async def test_an_oversized_result_becomes_a_too_large_error_result() -> None:
    stack = await start_stack(SCRIPT, registry())
    try:
        events = await stack.run("one big", deadline_s=60)
        assert final_of(events).final_reply == "done"
        (result,) = results(events)
        assert result.is_error
        assert result.error_kind == common_pb2.TOOL_ERROR_KIND_TOO_LARGE
        assert f"at most {DEFAULT_MAX_RESULT_BYTES} bytes" in result.content
        assert "Call it again asking for less data" in result.content
    finally:
        await stack.close()


async def test_a_batch_of_large_results_stays_under_the_message_limit() -> None:
    stack = await start_stack(SCRIPT, registry(), gateway_overrides={"max_tool_calls_per_step": MANY})
    try:
        # RunFinal carries the whole conversation: this client accepts as much as the gateway sends.
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{stack.gateway.port}", options=CHANNEL_OPTIONS)
        stack.resources.push_async_callback(channel.close)
        call = agent_pb2_grpc.AgentStub(channel).Run(agent_pb2.RunRequest(input="many big"), timeout=120)
        events = [response.event async for response in call]
        assert final_of(events).final_reply == "done"
        ends = results(events)
        assert len(ends) == MANY
        kept = [r for r in ends if not r.is_error]
        refused = [r for r in ends if r.is_error]
        assert sum(len(r.content) for r in kept) <= MAX_BATCH_RESULT_BYTES
        assert refused
        assert all(r.error_kind == common_pb2.TOOL_ERROR_KIND_TOO_LARGE for r in refused)
        assert all("the results of one step may hold together" in r.content for r in refused)
    finally:
        await stack.close()
