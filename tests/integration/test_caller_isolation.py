"""Every Agent RPC acts as its caller only: another user's thread, run and memory are out of reach.

The table has one row per RPC of the Agent service, checked against the
service descriptor, so an RPC added to the contract fails here until its
isolation is proven. Callers are authenticated by bearer token (the token's
user is the caller whatever `user_id` says) and, without authentication, by
`user_id`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc
import pytest

from agentloop.kernel.security import Authenticator
from agentloop.v1 import agent_pb2, agent_pb2_grpc, common_pb2
from tests.support.stack import Stack, start_stack

pytestmark = pytest.mark.integration

TOKENS = {"tok-ana": "ana", "tok-bob": "bob"}


@dataclass(frozen=True)
class Anas:
    """What ana owns: a thread with a finished run, one of its checkpoints and a memory."""

    thread_id: str
    run_id: str
    checkpoint_id: str
    memory_id: str


Call = Callable[[agent_pb2_grpc.AgentStub, Anas, Any], Awaitable[object]]


async def drain(stream: Any) -> list[Any]:
    return [item async for item in stream]


# Each row: how bob (metadata `md`) reaches for ana's things through one RPC.
ATTEMPTS: dict[str, Call] = {
    "GetThread": lambda a, x, md: a.GetThread(agent_pb2.GetThreadRequest(thread_id=x.thread_id), metadata=md),
    "GetThread as of a checkpoint": lambda a, x, md: a.GetThread(
        agent_pb2.GetThreadRequest(thread_id=x.thread_id, checkpoint_id=x.checkpoint_id), metadata=md
    ),
    "ListCheckpoints": lambda a, x, md: a.ListCheckpoints(
        agent_pb2.ListCheckpointsRequest(thread_id=x.thread_id), metadata=md
    ),
    "ForkThread": lambda a, x, md: a.ForkThread(
        agent_pb2.ForkThreadRequest(thread_id=x.thread_id, checkpoint_id=x.checkpoint_id), metadata=md
    ),
    "ListRuns": lambda a, x, md: a.ListRuns(agent_pb2.ListRunsRequest(thread_id=x.thread_id), metadata=md),
    "Resume": lambda a, x, md: drain(a.Resume(agent_pb2.ResumeRequest(run_id=x.run_id), metadata=md)),
    "Cancel": lambda a, x, md: a.Cancel(agent_pb2.CancelRequest(run_id=x.run_id), metadata=md),
    "Watch": lambda a, x, md: drain(a.Watch(agent_pb2.WatchRequest(run_id=x.run_id), metadata=md)),
    "DeleteMemory": lambda a, x, md: a.DeleteMemory(
        agent_pb2.DeleteMemoryRequest(memory_id=x.memory_id), metadata=md
    ),
}


def rpc_of(row: str) -> str:
    return row.split(" ", 1)[0]


@pytest.fixture(params=["token", "user_id"])
async def setup(request: pytest.FixtureRequest) -> AsyncIterator[tuple[Stack, Anas, Any, Any]]:
    """The stack, ana's things, and the metadata (or user) ana and bob call with."""
    by_token = request.param == "token"
    authenticator = Authenticator(tokens=dict(TOKENS)) if by_token else None
    stack = await start_stack(authenticator=authenticator)
    ana: Any = (("authorization", "Bearer tok-ana"),) if by_token else None
    bob: Any = (("authorization", "Bearer tok-bob"),) if by_token else None
    try:
        user = "" if by_token else "ana"
        reply = await stack.agent.Invoke(
            agent_pb2.InvokeRequest(input="remember that my cat is Tom", user_id=user), metadata=ana
        )
        memories = await stack.agent.ListMemories(agent_pb2.ListMemoriesRequest(user_id=user), metadata=ana)
        assert len(memories.memories) == 1
        anas = Anas(reply.thread_id, reply.run_id, f"{reply.run_id}:1", memories.memories[0].memory_id)
        yield stack, anas, ana, bob
    finally:
        await stack.close()


def as_bob(call: Call, by_token: bool) -> Call:
    """The call as bob: his token, or (without authentication) his user_id on the request."""
    if by_token:
        return call

    async def with_user(agent: agent_pb2_grpc.AgentStub, anas: Anas, md: Any) -> object:
        return await call(_NamingBob(agent), anas, md)

    return with_user


class _NamingBob:
    """An Agent stub that sets user_id="bob" on every request it sends."""

    def __init__(self, agent: agent_pb2_grpc.AgentStub) -> None:
        self._agent = agent

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._agent, name)

        def call(request: Any, **kwargs: Any) -> Any:
            request.user_id = "bob"
            return method(request, **kwargs)

        return call


def test_the_table_covers_every_agent_rpc() -> None:
    service = agent_pb2.DESCRIPTOR.services_by_name["Agent"]
    covered = {rpc_of(row) for row in ATTEMPTS} | {"Run", "Invoke", "ListMemories", "ListThreads"}
    assert covered == {m.name for m in service.methods}


@pytest.mark.parametrize("row", sorted(ATTEMPTS))
async def test_another_users_thread_run_and_memory_are_not_found(
    setup: tuple[Stack, Anas, Any, Any], row: str
) -> None:
    stack, anas, _, bob = setup
    by_token = bob is not None
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await as_bob(ATTEMPTS[row], by_token)(stack.agent, anas, bob)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND, info.value.details()


async def test_runs_and_memories_of_another_user_stay_apart(setup: tuple[Stack, Anas, Any, Any]) -> None:
    """Run, Invoke, ListThreads, ListMemories: bob naming ana's thread gets his own; ana's is untouched."""
    stack, anas, ana, bob = setup
    agent = stack.agent if bob is not None else _NamingBob(stack.agent)
    ana_user = "" if bob is not None else "ana"
    events = await drain(agent.Run(agent_pb2.RunRequest(input="hi", thread_id=anas.thread_id), metadata=bob))
    invoked = await agent.Invoke(agent_pb2.InvokeRequest(input="hi", thread_id=anas.thread_id), metadata=bob)
    assert anas.run_id not in {e.event.run_id for e in events} | {invoked.run_id}
    mine = await agent.GetThread(agent_pb2.GetThreadRequest(thread_id=anas.thread_id), metadata=bob)
    assert [m.content for m in mine.messages if m.role == common_pb2.ROLE_USER] == ["hi", "hi"]
    theirs = await stack.agent.GetThread(
        agent_pb2.GetThreadRequest(thread_id=anas.thread_id, user_id=ana_user), metadata=ana
    )
    assert [m.content for m in theirs.messages if m.role == common_pb2.ROLE_USER] == [
        "remember that my cat is Tom"
    ]
    memories = await agent.ListMemories(agent_pb2.ListMemoriesRequest(), metadata=bob)
    assert list(memories.memories) == []
    threads = await agent.ListThreads(agent_pb2.ListThreadsRequest(), metadata=bob)
    assert [t.message_count for t in threads.threads] == [4]  # his own thread: two questions, two answers
