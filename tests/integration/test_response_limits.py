"""Every response fits a client with gRPC's default 4 MiB receive limit, however big the answers.

The client is a plain `grpc.aio.insecure_channel` with no options. Answers of
2.2 MB and 5 MB come from the scripted model through the real Reasoner; the
gateway's own message limit (32 MiB) lets them in, and it must still answer
every RPC under 4 MiB: Run's final event and Invoke carry the reply whole
when it fits and cut the run's messages (flagged), listings are cut by
bytes and show previews, GetThread cuts a message too big for a page and
continues it on the next one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest

from agentloop.internal.v1 import checkpoint_pb2
from agentloop.scripted_model import Scenario, Script, Turn
from agentloop.v1 import agent_pb2, agent_pb2_grpc, common_pb2
from gateway.journal.budget import PREVIEW_CHARS
from gateway.store.base import CheckpointWrite, RunStatus
from tests.support.stack import Stack, final_of, start_stack

pytestmark = pytest.mark.integration

USER = "ana"
DEFAULT_LIMIT = 4 * 1024 * 1024
WORD = 100_000


def answer(size: int, tag: str) -> str:
    """About `size` characters in words of WORD characters: a few big streamed tokens."""
    words = [(tag + str(i)).ljust(WORD, "x") for i in range(size // WORD)]
    return " ".join(words)


BIG = answer(2_200_000, "b")
HUGE = answer(5_000_000, "h")
SCRIPT = Script(
    scenarios=(
        Scenario(match="^big", turns=(Turn(content=BIG),)),
        Scenario(match="^huge", turns=(Turn(content=HUGE),)),
    )
)


@pytest.fixture
async def stack(database_url: str) -> AsyncIterator[Stack]:
    # A context budget above the answers: the model is sent the whole thread, nothing is summarized.
    # The reasoner takes answers up to 8 MiB (an operator's choice; 4 MiB by default).
    overrides = {"context_budget_tokens": 10_000_000}
    reasoner = {"max_completion_bytes": 8 * 1024 * 1024}
    stack = await start_stack(
        SCRIPT, database_url=database_url, gateway_overrides=overrides, reasoner_overrides=reasoner
    )
    try:
        yield stack
    finally:
        await stack.close()


@pytest.fixture
async def client(stack: Stack) -> AsyncIterator[agent_pb2_grpc.AgentStub]:
    async with grpc.aio.insecure_channel(stack.address) as channel:
        yield agent_pb2_grpc.AgentStub(channel)


async def whole_thread(client: agent_pb2_grpc.AgentStub, thread_id: str) -> list[common_pb2.Message]:
    """Every message of the thread, read page by page, parts of a cut message joined."""
    return (await read_pages(client, thread_id))[0]


async def read_pages(
    client: agent_pb2_grpc.AgentStub, thread_id: str
) -> tuple[list[common_pb2.Message], int]:
    """(every message of the thread, parts of a cut message joined; how many pages ended inside one)."""
    messages: list[common_pb2.Message] = []
    cut = 0
    token = ""
    while True:
        page = await client.GetThread(
            agent_pb2.GetThreadRequest(thread_id=thread_id, user_id=USER, page_token=token), timeout=30
        )
        assert page.ByteSize() < DEFAULT_LIMIT
        parts = list(page.messages)
        if page.first_message_continued:
            messages[-1].content += parts[0].content
            messages[-1].reasoning_content += parts[0].reasoning_content
            parts = parts[1:]
        messages.extend(parts)
        cut += page.last_message_continues
        token = page.next_page_token
        if not token:
            return messages, cut


@pytest.mark.parametrize("mode", [agent_pb2.STREAM_MODE_NONE, agent_pb2.STREAM_MODE_FINAL_ONLY])
async def test_a_2_mb_answer_reaches_a_default_client_through_run_invoke_watch_and_get_thread(
    client: agent_pb2_grpc.AgentStub, mode: agent_pb2.StreamMode.ValueType
) -> None:
    options = agent_pb2.RunOptions(stream_mode=mode)
    events = [
        r.event
        async for r in client.Run(
            agent_pb2.RunRequest(input="big one", user_id=USER, thread_id="t", options=options), timeout=60
        )
    ]
    final = final_of(events)
    assert final.final_reply == BIG
    assert not final.final_reply_truncated
    # The reply alone fits; the run's messages (its question, then the same 2.2 MB) do not.
    assert final.run_messages_truncated
    assert [m.content for m in final.run_messages] == ["big one"]
    assert all(e.ByteSize() < DEFAULT_LIMIT for e in events)

    watched = [
        r.event
        async for r in client.Watch(agent_pb2.WatchRequest(run_id=events[0].run_id, user_id=USER), timeout=30)
    ]
    assert final_of(watched) == final

    invoked = await client.Invoke(
        agent_pb2.InvokeRequest(input="big two", user_id=USER, thread_id="t"), timeout=60
    )
    assert invoked.final.final_reply == BIG

    page = await client.GetThread(agent_pb2.GetThreadRequest(thread_id="t", user_id=USER), timeout=30)
    assert page.state.final_reply_truncated
    assert BIG.startswith(page.state.final_reply)
    assert [m.content for m in await whole_thread(client, "t")] == ["big one", BIG, "big two", BIG]


async def test_a_message_bigger_than_a_response_is_continued_across_pages(
    client: agent_pb2_grpc.AgentStub,
) -> None:
    options = agent_pb2.RunOptions(stream_mode=agent_pb2.STREAM_MODE_NONE)
    events = [
        r.event
        async for r in client.Run(
            agent_pb2.RunRequest(input="huge", user_id=USER, thread_id="h", options=options), timeout=60
        )
    ]
    final = final_of(events)
    assert final.final_reply_truncated
    assert HUGE.startswith(final.final_reply)
    assert len(final.final_reply) > 3_000_000
    assert all(e.ByteSize() < DEFAULT_LIMIT for e in events)

    messages, cut = await read_pages(client, "h")
    assert [m.content for m in messages] == ["huge", HUGE]
    assert cut == 1


async def test_list_runs_of_many_2_mb_answers_pages_previews_to_a_default_client(
    stack: Stack, client: agent_pb2_grpc.AgentStub
) -> None:
    # 17 finished runs answering 2.2 MB each, written through the store: run by run through the
    # model, the thread (sent whole with each call) would pass the Reasoner's 32 MiB limit.
    store = stack.gateway.store
    await store.create_thread("many", USER)
    for i in range(17):
        run_id = f"run-{i:02d}"
        request = agent_pb2.RunRequest(input=f"big {i}", user_id=USER, thread_id="many")
        await store.create_run(run_id, "many", USER, request.SerializeToString(), owner="seeder", lease_s=60)
        said = [
            common_pb2.Message(role=common_pb2.ROLE_USER, content=f"big {i}"),
            common_pb2.Message(role=common_pb2.ROLE_ASSISTANT, content=BIG),
        ]
        record = checkpoint_pb2.CheckpointRecord(
            node="finalize", message_count=2 * (i + 1), stop=True, final_reply=BIG
        )
        write = CheckpointWrite(
            run_id=run_id, owner="seeder", record=record, new_messages=said, status=RunStatus.COMPLETED
        )
        await store.write_checkpoint(write)
    runs: list[agent_pb2.RunInfo] = []
    token = ""
    while True:
        page = await client.ListRuns(
            agent_pb2.ListRunsRequest(thread_id="many", user_id=USER, page_size=1000, page_token=token),
            timeout=30,
        )
        assert page.ByteSize() < DEFAULT_LIMIT
        runs.extend(page.runs)
        token = page.next_page_token
        if not token:
            break
    assert len({r.run_id for r in runs}) == len(runs) == 17
    for run in runs:
        assert run.final_reply_truncated
        assert run.final_reply == BIG[:PREVIEW_CHARS]
    # The whole reply of any run: its conversation as of its checkpoint.
    as_of = await client.GetThread(
        agent_pb2.GetThreadRequest(thread_id="many", user_id=USER, checkpoint_id=runs[-1].checkpoint_id),
        timeout=30,
    )
    assert as_of.total_messages == 2
    threads = await client.ListThreads(agent_pb2.ListThreadsRequest(user_id=USER), timeout=30)
    assert threads.ByteSize() < DEFAULT_LIMIT
