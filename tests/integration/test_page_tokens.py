"""Page tokens of every paged RPC: opaque, bound to their request, tamper-evident; pages stable under writes.

Through the real gateway, on SQLite and Postgres. A token works only for the
RPC, the user and the thread (run filter, checkpoint view) it was issued for;
anything else, forged or edited, is INVALID_ARGUMENT naming `page_token`.
Items added or changed between two pages never make another item repeat or
go missing. With Postgres, a token issued by one gateway is accepted by
another on the same database (the key is the store's).
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import pytest

from agentloop.v1 import agent_pb2
from tests.support.postgres import fresh_postgres_database
from tests.support.stack import Stack, running_stack, start_stack

pytestmark = pytest.mark.integration

ANA, BO = "ana", "bo"
Call = Callable[..., Awaitable[Any]]


@pytest.fixture
async def stack(database_url: str) -> AsyncIterator[Stack]:
    async with running_stack(database_url=database_url) as stack:
        for thread in ("t1", "t2"):
            for i in range(3):
                await stack.run(f"hello {i}", thread_id=thread, user_id=ANA)
        await stack.run("hello", thread_id="t1", user_id=BO)
        for i in range(3):
            await stack.gateway.store.add_memory(ANA, f"fact {i}")
        yield stack


def rpcs(stack: Stack) -> dict[str, tuple[Call, Callable[..., Any], str]]:
    """Each paged RPC: its stub method, its request type and the repeated field of its response."""
    agent = stack.agent
    return {
        "GetThread": (agent.GetThread, agent_pb2.GetThreadRequest, "messages"),
        "ListCheckpoints": (agent.ListCheckpoints, agent_pb2.ListCheckpointsRequest, "checkpoints"),
        "ListThreads": (agent.ListThreads, agent_pb2.ListThreadsRequest, "threads"),
        "ListRuns": (agent.ListRuns, agent_pb2.ListRunsRequest, "runs"),
        "ListMemories": (agent.ListMemories, agent_pb2.ListMemoriesRequest, "memories"),
    }


def request_of(kind: Callable[..., Any], **fields: Any) -> Any:
    """A request of `kind` with those of `fields` it has (thread_id is not a field of every listing)."""
    names = {f.name for f in kind.DESCRIPTOR.fields}
    return kind(**{k: v for k, v in fields.items() if k in names})


async def refused(call: Call, request: Any) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call(request, timeout=30)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, info.value.details()
    details = info.value.details() or ""
    assert details.startswith("page_token"), details
    return details


async def test_every_paged_rpc_pages_through_everything_with_its_own_tokens(stack: Stack) -> None:
    for name, (call, kind, field) in rpcs(stack).items():
        whole = await call(request_of(kind, thread_id="t1", user_id=ANA, page_size=1000), timeout=30)
        items, token, pages = [], "", 0
        while True:
            page = await call(
                request_of(kind, thread_id="t1", user_id=ANA, page_size=1, page_token=token), timeout=30
            )
            items.extend(getattr(page, field))
            pages += 1
            token = page.next_page_token
            if not token:
                break
        assert items == list(getattr(whole, field)), name
        assert pages == len(items) > 1, name


async def test_a_token_is_refused_for_another_rpc_thread_user_view_or_when_forged(stack: Stack) -> None:
    table = rpcs(stack)
    tokens = {}
    for name, (call, kind, _) in table.items():
        first = await call(request_of(kind, thread_id="t1", user_id=ANA, page_size=1), timeout=30)
        assert first.next_page_token, name
        tokens[name] = first.next_page_token
    checkpoints = await stack.agent.ListCheckpoints(
        agent_pb2.ListCheckpointsRequest(thread_id="t1", user_id=ANA), timeout=30
    )
    other_view = checkpoints.checkpoints[-1].checkpoint_id
    for name, (call, kind, _) in table.items():
        token = tokens[name]
        # Another RPC's token.
        for other, other_token in tokens.items():
            if other != name:
                await refused(call, request_of(kind, thread_id="t1", user_id=ANA, page_token=other_token))
        # Another user: bo has a thread "t1" too, and memories of his own.
        await refused(call, request_of(kind, thread_id="t1", user_id=BO, page_token=token))
        # Forged, edited, or a bare offset of the old tokens.
        edited = (
            base64.urlsafe_b64encode(b"x" + base64.urlsafe_b64decode(token + "==")[1:]).decode().rstrip("=")
        )
        for forged in ("7", "9223372036854775807", "-1", edited, token[:-2], token + "AA", "é", "A" * 5000):
            await refused(call, request_of(kind, thread_id="t1", user_id=ANA, page_token=forged))
        # The right request still takes it.
        await call(request_of(kind, thread_id="t1", user_id=ANA, page_token=token), timeout=30)
    # Thread-bound tokens: another thread of the same user.
    for name in ("GetThread", "ListCheckpoints", "ListRuns"):
        call, kind, _ = table[name]
        await refused(call, request_of(kind, thread_id="t2", user_id=ANA, page_token=tokens[name]))
    # GetThread's token is bound to its checkpoint view, ListCheckpoints' to its run filter.
    await refused(
        stack.agent.GetThread,
        agent_pb2.GetThreadRequest(
            thread_id="t1", user_id=ANA, checkpoint_id=other_view, page_token=tokens["GetThread"]
        ),
    )
    await refused(
        stack.agent.ListCheckpoints,
        agent_pb2.ListCheckpointsRequest(
            thread_id="t1",
            user_id=ANA,
            run_id=checkpoints.checkpoints[0].run_id,
            page_token=tokens["ListCheckpoints"],
        ),
    )


async def test_pages_stay_stable_when_items_are_added_or_changed_between_them(stack: Stack) -> None:
    agent = stack.agent
    for i in range(4):
        await stack.run(f"hi {i}", thread_id="s", user_id="cy")
    for i in range(3):
        await stack.run("hi", thread_id=f"u{i}", user_id="cy")
    # Threads, newest activity first: u2 u1 u0 s. Page one, then a new thread and new activity on u1.
    first = await agent.ListThreads(agent_pb2.ListThreadsRequest(user_id="cy", page_size=2), timeout=30)
    assert [t.thread_id for t in first.threads] == ["u2", "u1"]
    await stack.run("again", thread_id="u1", user_id="cy")
    await stack.run("new", thread_id="u3", user_id="cy")
    rest = await agent.ListThreads(
        agent_pb2.ListThreadsRequest(user_id="cy", page_token=first.next_page_token), timeout=30
    )
    assert [t.thread_id for t in rest.threads] == ["u0", "s"]
    # Runs, newest first: a run added between pages shifts nothing.
    runs = await agent.ListRuns(
        agent_pb2.ListRunsRequest(thread_id="s", user_id="cy", page_size=2), timeout=30
    )
    await stack.run("one more", thread_id="s", user_id="cy")
    older = await agent.ListRuns(
        agent_pb2.ListRunsRequest(thread_id="s", user_id="cy", page_token=runs.next_page_token), timeout=30
    )
    names = [r.run_id for r in [*runs.runs, *older.runs]]
    assert len(names) == len(set(names)) == 4
    # Memories, newest first: one added between pages shifts nothing.
    store = stack.gateway.store
    for i in range(3):
        await store.add_memory("cy", f"fact {i}")
    page = await agent.ListMemories(agent_pb2.ListMemoriesRequest(user_id="cy", page_size=2), timeout=30)
    await store.add_memory("cy", "newer")
    last = await agent.ListMemories(
        agent_pb2.ListMemoriesRequest(user_id="cy", page_token=page.next_page_token), timeout=30
    )
    assert [m.text for m in [*page.memories, *last.memories]] == ["fact 2", "fact 1", "fact 0"]


async def test_a_token_from_one_gateway_is_accepted_by_another_on_the_same_database() -> None:
    async with fresh_postgres_database() as url:
        first = await start_stack(database_url=url)
        second = await start_stack(database_url=url)
        try:
            for i in range(3):
                await first.run(f"hello {i}", thread_id="t", user_id=ANA)
            page = await first.agent.ListRuns(
                agent_pb2.ListRunsRequest(thread_id="t", user_id=ANA, page_size=1), timeout=30
            )
            rest = await second.agent.ListRuns(
                agent_pb2.ListRunsRequest(thread_id="t", user_id=ANA, page_token=page.next_page_token),
                timeout=30,
            )
            assert len(rest.runs) == 2
        finally:
            await second.close()
            await first.close()
