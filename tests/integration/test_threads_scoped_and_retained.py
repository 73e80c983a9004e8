"""Thread ids scoped per user, retention that spares paused runs, refused runs that leave no trace,
and text the database cannot store — through the real services, on SQLite and on Postgres."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import pytest
from google.rpc import code_pb2
from sqlalchemy import NullPool, text
from sqlalchemy.ext.asyncio import create_async_engine

from agentloop.scripted_model import Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2, common_pb2
from tests.support.stack import Stack, final_of, kinds, start_stack
from tests.support.tools import make_registry

pytestmark = pytest.mark.integration

SCRIPT = Script(
    scenarios=(
        Scenario(
            match="slow tool",
            turns=(Turn(tool_calls=(ScriptedToolCall("sleep_for", {"seconds": 30}),)), Turn(content="done")),
        ),
        Scenario(
            match="add please",
            turns=(Turn(tool_calls=(ScriptedToolCall("add", {"a": 1, "b": 2}),)), Turn(content="added")),
        ),
        Scenario(
            match="odd ids",
            turns=(
                Turn(
                    content="thinking\x00aloud",
                    tool_calls=(
                        ScriptedToolCall("add", {"a": 1, "b": 2}, id="call\x00zero"),
                        ScriptedToolCall("track", {"label": "nul\x00inside"}, id="call\x00one"),
                    ),
                ),
                Turn(content="sum {{tool:add}}, {{tool:track}}, then\x00end"),
            ),
        ),
        Scenario(match="", turns=(Turn(content="Reply to: {{user}}"),)),
    )
)


async def _stack(database_url: str, **overrides: object) -> Stack:
    return await start_stack(
        SCRIPT, make_registry()[0], database_url=database_url, gateway_overrides=dict(overrides)
    )


@pytest.fixture
async def stack(database_url: str) -> AsyncIterator[Stack]:
    stack = await _stack(database_url)
    try:
        yield stack
    finally:
        await stack.close()


async def _thread(stack: Stack, thread_id: str, user_id: str) -> agent_pb2.GetThreadResponse:
    return await stack.agent.GetThread(agent_pb2.GetThreadRequest(thread_id=thread_id, user_id=user_id))


async def _thread_exists(stack: Stack, thread_id: str, user_id: str) -> bool:
    try:
        await _thread(stack, thread_id, user_id)
    except grpc.aio.AioRpcError as exc:
        if exc.code() == grpc.StatusCode.NOT_FOUND:
            return False
        raise
    return True


async def test_threads_are_scoped_per_user(stack: Stack) -> None:
    ana = await stack.run("hello from ana", thread_id="shared", user_id="ana")
    assert final_of(ana).final_reply == "Reply to: hello from ana"
    # bob learns nothing from ana's id: his Run on it simply starts his own thread.
    bob = await stack.run("hello from bob", thread_id="shared", user_id="bob")
    assert final_of(bob).final_reply == "Reply to: hello from bob"
    assert bob[0].thread_id == "shared"
    bobs = await _thread(stack, "shared", "bob")
    assert [m.content for m in bobs.messages if m.role == common_pb2.ROLE_USER] == ["hello from bob"]
    assert bobs.state.run_id == bob[0].run_id
    anas = await _thread(stack, "shared", "ana")
    assert [m.content for m in anas.messages if m.role == common_pb2.ROLE_USER] == ["hello from ana"]
    assert anas.state.run_id == ana[0].run_id
    # ana's checkpoints are not bob's, not even by naming one.
    page = await stack.agent.ListCheckpoints(
        agent_pb2.ListCheckpointsRequest(thread_id="shared", user_id="bob")
    )
    assert {c.run_id for c in page.checkpoints} == {bob[0].run_id}
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.agent.GetThread(
            agent_pb2.GetThreadRequest(thread_id="shared", user_id="bob", checkpoint_id=f"{ana[0].run_id}:1")
        )
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    # ana's thread goes on with her conversation only.
    again = await stack.run("ana again", thread_id="shared", user_id="ana")
    assert final_of(again).final_reply == "Reply to: ana again"
    anas = await _thread(stack, "shared", "ana")
    assert [m.content for m in anas.messages if m.role == common_pb2.ROLE_USER] == [
        "hello from ana",
        "ana again",
    ]


async def test_a_refused_run_never_becomes_the_threads_latest_run(stack: Stack) -> None:
    call = stack.agent.Run(agent_pb2.RunRequest(input="slow tool", thread_id="busy", user_id="ana"))
    first: agent_pb2.RunEvent | None = None
    async for response in call:
        first = first or response.event
        if response.event.WhichOneof("event") == "tool_start":
            break
    assert first is not None
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.run("hello", thread_id="busy", user_id="ana")
    assert info.value.code() == grpc.StatusCode.ABORTED
    thread = await _thread(stack, "busy", "ana")
    assert thread.state.run_id == first.run_id
    assert thread.state.status == agent_pb2.RUN_STATUS_RUNNING
    await stack.agent.Cancel(agent_pb2.CancelRequest(run_id=first.run_id, user_id="ana"), timeout=15)
    call.cancel()


async def test_get_thread_answers_from_one_read_when_retention_deletes_the_thread_meanwhile(
    stack: Stack,
) -> None:
    """Retention deleting a thread while GetThread reads it: the reply or NOT_FOUND, never INTERNAL."""
    from gateway.store.scope import thread_key

    await stack.run("hello", thread_id="doomed", user_id="ana")
    store = stack.gateway.store
    read_thread = store.get_thread

    async def read_then_retention_deletes(thread_id: str, *, user_id: str) -> object:
        row = await read_thread(thread_id, user_id=user_id)
        async with store.engine.begin() as conn:  # type: ignore[attr-defined]
            await conn.execute(
                text("DELETE FROM threads WHERE thread_id = :key"), {"key": thread_key(user_id, thread_id)}
            )
        return row

    store.get_thread = read_then_retention_deletes  # type: ignore[method-assign]
    try:
        thread = await _thread(stack, "doomed", "ana")
    finally:
        store.get_thread = read_thread  # type: ignore[method-assign]
    assert thread.thread_id == "doomed"
    assert not await _thread_exists(stack, "doomed", "ana")


async def test_retention_spares_a_thread_paused_for_approval(database_url: str) -> None:
    stack = await _stack(database_url, retention_idle_ttl_s=2.0, retention_interval_s=1.0)
    try:
        paused = await stack.run("add please", thread_id="waiting", user_id="ana", require_approval=["add"])
        assert "interrupt" in kinds(paused)
        await stack.run("hello", thread_id="idle", user_id="ana")

        deadline = asyncio.get_running_loop().time() + 15
        while await _thread_exists(stack, "idle", "ana"):
            assert asyncio.get_running_loop().time() < deadline, "retention never deleted the idle thread"
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.5)  # one more retention pass at least
        thread = await _thread(stack, "waiting", "ana")
        assert thread.state.status == agent_pb2.RUN_STATUS_PAUSED
        pending = next(e for e in paused if e.WhichOneof("event") == "interrupt").interrupt.pending[0]
        decision = agent_pb2.ApprovalDecision(
            tool_call_id=pending.id, verdict=agent_pb2.ApprovalDecision.VERDICT_APPROVE
        )
        resumed = [
            r.event
            async for r in stack.agent.Resume(
                agent_pb2.ResumeRequest(run_id=paused[0].run_id, user_id="ana", decisions=[decision]),
                timeout=30,
            )
        ]
        assert final_of(resumed).final_reply == "added"
    finally:
        await stack.close()


async def test_a_question_with_nul_is_refused_naming_the_field(stack: Stack) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.run("remember that a\x00b", user_id="ana")
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details() == "input: must not contain NUL characters"
    memories = await stack.agent.ListMemories(agent_pb2.ListMemoriesRequest(user_id="ana"))
    assert list(memories.memories) == []


async def test_a_model_reply_with_nul_in_ids_content_and_arguments_completes(stack: Stack) -> None:
    events = await stack.run("odd ids", thread_id="odd", user_id="ana")
    final = final_of(events)
    assert final.final_reply == "sum 3, tracked nul\x00inside, then\x00end"
    ends = [e.tool_end for e in events if e.WhichOneof("event") == "tool_end"]
    # Ids the database cannot store are replaced by the gateway before anything is stored.
    ids = [e.result.tool_call_id for e in ends]
    assert len(ids) == len(set(ids)) == 2
    assert all("\x00" not in i for i in ids)
    assert not any(e.result.is_error for e in ends)
    thread = await _thread(stack, "odd", "ana")
    assert thread.state.status == agent_pb2.RUN_STATUS_COMPLETED
    assert thread.messages[-1].content == "sum 3, tracked nul\x00inside, then\x00end"


async def test_a_store_error_reaches_the_client_without_sql_or_bound_values(
    stack: Stack, database_url: str
) -> None:
    engine = create_async_engine(database_url, poolclass=NullPool)
    try:
        async with engine.begin() as conn:
            await conn.execute(text("DROP TABLE memories"))
    finally:
        await engine.dispose()
    events = await stack.run("remember that my pin is 4711", user_id="ana")
    error = events[-1].error
    assert (error.code, error.node) == (code_pb2.INTERNAL, "memory_trigger")
    assert error.message.startswith("the database refused a write (")  # the kind, never SQL or values
    assert "INSERT" not in error.message
    assert "4711" not in error.message
    assert "ana" not in error.message
