"""A parallel tool round's results are stored with the checkpoint that ends the round, through the services.

The round's last results cost no transaction of their own (one write fewer
per step), yet a client still never hears of a result the store lacks: their
tool_end events wait for that checkpoint. On both stores, with the gateway's
store wrapped to count and to hold writes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import grpc
import pytest

from agentloop.scripted_model import Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2, common_pb2
from gateway.store.base import CheckpointWrite, RunRow
from gateway.store.sql import SqlStore
from tests.support.stack import final_of, kinds, start_stack
from tests.support.tools import make_registry

pytestmark = pytest.mark.integration


def _round(first: int) -> Turn:
    return Turn(tool_calls=tuple(ScriptedToolCall("add", {"a": first + i, "b": 1}) for i in range(3)))


SCRIPT = Script(scenarios=(Scenario(match="", turns=(_round(0), _round(10), Turn(content="done"))),))


class CountingStore(SqlStore):
    """Counts result writes; can hold the checkpoint that ends a tools node until released."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.result_writes: list[list[str]] = []
        self.carried: list[list[str]] = []
        self.hold_tools_checkpoint = False
        self.tools_checkpoint_reached = asyncio.Event()
        self.release = asyncio.Event()

    async def record_tool_results(
        self, run_id: str, owner: str, results: Sequence[common_pb2.ToolResult]
    ) -> None:
        self.result_writes.append([r.tool_call_id for r in results])
        await super().record_tool_results(run_id, owner, results)

    async def write_checkpoint(self, write: CheckpointWrite) -> RunRow:
        if write.tool_results:
            self.carried.append([r.tool_call_id for r in write.tool_results])
            if self.hold_tools_checkpoint:
                self.tools_checkpoint_reached.set()
                await self.release.wait()
        return await super().write_checkpoint(write)


async def test_a_parallel_round_costs_no_write_of_its_own_and_every_result_is_stored(
    database_url: str,
) -> None:
    from gateway.store import migrate

    await migrate.upgrade_async(database_url)
    store = CountingStore(database_url)
    stack = await start_stack(SCRIPT, make_registry()[0], database_url=database_url, store=store)
    try:
        events = await stack.run("add them", user_id="ana")
        assert final_of(events).final_reply == "done"
        assert store.result_writes == []
        assert [len(ids) for ids in store.carried] == [3, 3]
        run_id = events[0].run_id
        stored = await store.tool_results(run_id)
        ended = [e.tool_end.tool_call_id for e in events if e.WhichOneof("event") == "tool_end"]
        assert list(stored) == ended
        assert len(stored) == 6
        assert [r.content for r in stored.values()] == ["1", "2", "3", "11", "12", "13"]
        # Invoke answered from the store (a retried request) lists them all too.
        reply = await stack.agent.Invoke(
            agent_pb2.InvokeRequest(input="add them", user_id="ana", request_id="again"), timeout=30
        )
        again = await stack.agent.Invoke(
            agent_pb2.InvokeRequest(input="add them", user_id="ana", request_id="again"), timeout=30
        )
        assert [r.content for r in again.tool_results] == [r.content for r in reply.tool_results]
        assert len(again.tool_results) == 6
    finally:
        await stack.close()


async def test_no_client_hears_of_a_result_before_the_checkpoint_that_stores_it(database_url: str) -> None:
    from gateway.store import migrate

    await migrate.upgrade_async(database_url)
    store = CountingStore(database_url)
    store.hold_tools_checkpoint = True
    stack = await start_stack(SCRIPT, make_registry()[0], database_url=database_url, store=store)
    try:
        call = stack.agent.Run(agent_pb2.RunRequest(input="add them", user_id="ana"), timeout=30)
        seen: list[agent_pb2.RunEvent] = []

        async def follow(stream: grpc.aio.UnaryStreamCall) -> None:  # type: ignore[type-arg]
            async for response in stream:
                seen.append(response.event)

        following = asyncio.create_task(follow(call))
        await asyncio.wait_for(store.tools_checkpoint_reached.wait(), 30)
        await asyncio.sleep(0.3)  # time for anything already deliverable to reach the client
        assert kinds(seen).count("tool_start") == 3
        assert "tool_end" not in kinds(seen)
        assert await store.tool_results(seen[0].run_id) == {}
        store.release.set()
        await asyncio.wait_for(following, 30)
        assert kinds(seen).count("tool_end") == 6
        assert final_of(seen).final_reply == "done"
        assert len(await store.tool_results(seen[0].run_id)) == 6
    finally:
        store.release.set()
        await stack.close()
