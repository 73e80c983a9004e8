"""A thread far larger than gRPC's 4 MiB default is read whole by a client with default limits.

No response of the Agent API grows with the thread: a run's final event
carries what that run added, GetThread pages the conversation, and every
other event is bounded by one step. The client here is a plain
`grpc.aio.insecure_channel` with no options, as in any language's default.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest

from agentloop.internal.v1 import checkpoint_pb2
from agentloop.v1 import agent_pb2, agent_pb2_grpc, common_pb2
from gateway.store.base import CheckpointWrite, RunStatus, Store
from tests.support.stack import Stack, final_of, start_stack

pytestmark = pytest.mark.integration

USER = "ana"
THREAD = "big"
MESSAGE_BYTES = 1 << 20
MESSAGES = 18  # 18 MiB: over 16 MiB, four times the default receive limit
DEFAULT_LIMIT = 4 * 1024 * 1024


async def seed_thread(store: Store, thread_id: str, count: int) -> None:
    """Write `count` large messages into a new thread directly through the store, as one finished run."""
    await store.create_thread(thread_id, USER)
    request = agent_pb2.RunRequest(input="seed", user_id=USER, thread_id=thread_id).SerializeToString()
    await store.create_run("seed-run", thread_id, USER, request, owner="seeder", lease_s=60)
    messages = [
        common_pb2.Message(
            role=common_pb2.ROLE_USER if i % 2 == 0 else common_pb2.ROLE_ASSISTANT,
            content=f"{i:04d}" + "x" * (MESSAGE_BYTES - 4),
        )
        for i in range(count)
    ]
    record = checkpoint_pb2.CheckpointRecord(node="finalize", message_count=count, stop=True)
    await store.write_checkpoint(
        CheckpointWrite(
            run_id="seed-run",
            owner="seeder",
            record=record,
            new_messages=messages,
            status=RunStatus.COMPLETED,
        )
    )


@pytest.fixture
async def stack() -> AsyncIterator[Stack]:
    # A budget above the thread's size: the model is sent the whole thread, nothing is summarized.
    stack = await start_stack(gateway_overrides={"context_budget_tokens": 10_000_000})
    try:
        await seed_thread(stack.gateway.store, THREAD, MESSAGES)
        yield stack
    finally:
        await stack.close()


@pytest.fixture
async def default_client(stack: Stack) -> AsyncIterator[agent_pb2_grpc.AgentStub]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{stack.gateway.port}") as channel:
        yield agent_pb2_grpc.AgentStub(channel)


async def read_thread(client: agent_pb2_grpc.AgentStub) -> list[agent_pb2.GetThreadResponse]:
    pages = []
    token = ""
    while True:
        request = agent_pb2.GetThreadRequest(thread_id=THREAD, user_id=USER, page_token=token)
        page = await client.GetThread(request, timeout=30)
        pages.append(page)
        token = page.next_page_token
        if not token:
            return pages


async def test_a_thread_over_16_mib_is_read_by_a_default_limit_client(
    stack: Stack, default_client: agent_pb2_grpc.AgentStub
) -> None:
    pages = await read_thread(default_client)
    messages = [m for page in pages for m in page.messages]
    assert len(messages) == MESSAGES == pages[0].total_messages
    assert [m.content[:4] for m in messages] == [f"{i:04d}" for i in range(MESSAGES)]
    assert sum(m.ByteSize() for m in messages) > 16 * 1024 * 1024
    assert all(page.ByteSize() < DEFAULT_LIMIT for page in pages)

    run = [
        r.event
        async for r in default_client.Run(
            agent_pb2.RunRequest(input="and now?", user_id=USER, thread_id=THREAD), timeout=60
        )
    ]
    final = final_of(run)
    assert [m.content for m in final.run_messages] == ["and now?", final.final_reply]
    assert all(event.ByteSize() < DEFAULT_LIMIT for event in run)

    invoked = await default_client.Invoke(
        agent_pb2.InvokeRequest(input="once more", user_id=USER, thread_id=THREAD), timeout=60
    )
    assert [m.content for m in invoked.final.run_messages] == ["once more", invoked.final.final_reply]

    watched = [
        r.event
        async for r in default_client.Watch(
            agent_pb2.WatchRequest(run_id=run[0].run_id, user_id=USER), timeout=30
        )
    ]
    assert final_of(watched) == final

    pages = await read_thread(default_client)
    contents = [m.content for page in pages for m in page.messages]
    assert len(contents) == MESSAGES + 4
    assert contents[-4:] == ["and now?", final.final_reply, "once more", invoked.final.final_reply]


async def test_get_thread_pages_by_size_and_rejects_bad_page_requests(
    stack: Stack, default_client: agent_pb2_grpc.AgentStub
) -> None:
    request = agent_pb2.GetThreadRequest(thread_id=THREAD, user_id=USER, page_size=5)
    first = await default_client.GetThread(request, timeout=30)
    # 1 MiB messages: the byte bound (3.5 MiB) ends the page before page_size does, between messages.
    assert len(first.messages) == 3
    assert not first.last_message_continues
    assert first.ByteSize() < DEFAULT_LIMIT
    second = await default_client.GetThread(
        agent_pb2.GetThreadRequest(
            thread_id=THREAD, user_id=USER, page_size=5, page_token=first.next_page_token
        ),
        timeout=30,
    )
    assert [m.content[:4] for m in second.messages] == ["0003", "0004", "0005"]
    for bad, field in (({"page_size": -1}, "page_size"), ({"page_token": "x"}, "page_token")):
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await default_client.GetThread(
                agent_pb2.GetThreadRequest(thread_id=THREAD, user_id=USER, **bad), timeout=30
            )
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert (info.value.details() or "").startswith(field)
