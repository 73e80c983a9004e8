"""In-process stand-ins for the Reasoner and the ToolService, and a run wired to a throwaway SQLite store.

The fakes implement the two methods the loop uses of gateway/deps/clients.py's
ReasonerClient (`step`, `stream_step`) and ToolsClient (`execute`), so the
graph and its nodes run unchanged, in milliseconds, with no network: the way
a runner is tested against a fake model. The store is the real SQL store on a
temporary SQLite file, so checkpoints and tool results go where they go in
production.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest

from agentloop.v1 import agent_pb2, common_pb2, reasoner_pb2, tools_pb2
from gateway.deps.clients import ReasonerClient, ToolsClient
from gateway.journal.events import EventSink
from gateway.journal.run_journal import RunJournal
from gateway.journal.state import RunConfig, RunState
from gateway.loop.run_context import RunContext
from gateway.store.factory import open_store
from gateway.store.sql import SqlStore

OWNER = "gateway-under-test"
USAGE = common_pb2.Usage(prompt_tokens=10, completion_tokens=2, total_tokens=12)


def call(call_id: str, name: str, arguments_json: str = "{}") -> common_pb2.ToolCall:
    """A tool call as the model would make it."""
    return common_pb2.ToolCall(id=call_id, name=name, arguments_json=arguments_json)


def asks(*calls: common_pb2.ToolCall) -> common_pb2.Message:
    """An assistant message calling tools."""
    return common_pb2.Message(role=common_pb2.ROLE_ASSISTANT, tool_calls=calls)


def says(text: str) -> common_pb2.Message:
    """An assistant message answering in text."""
    return common_pb2.Message(role=common_pb2.ROLE_ASSISTANT, content=text)


class FakeReasoner:
    """Answers each model call with the next scripted message (or raises the next scripted error)."""

    def __init__(self, *replies: common_pb2.Message | BaseException) -> None:
        self.replies = list(replies)
        self.params: list[reasoner_pb2.CompletionParams] = []

    async def step(
        self, params: reasoner_pb2.CompletionParams, rpc_timeout_s: float
    ) -> reasoner_pb2.StepResult:
        """One model call: the next reply (a plain "done." when the script ran out)."""
        self.params.append(params)
        reply = self.replies.pop(0) if self.replies else says("done.")
        if isinstance(reply, BaseException):
            raise reply
        return reasoner_pb2.StepResult(message=reply, usage=USAGE)

    async def stream_step(
        self, params: reasoner_pb2.CompletionParams, rpc_timeout_s: float
    ) -> AsyncIterator[reasoner_pb2.StreamStepResponse]:
        """The same reply as one final stream event."""
        yield reasoner_pb2.StreamStepResponse(result=await self.step(params, rpc_timeout_s))


class FakeTools:
    """Runs every call at once: "<name>: <arguments>" as result; `hang` tools never finish."""

    def __init__(
        self, hang: Sequence[str] = (), fail: BaseException | None = None, gap_s: float = 0.0
    ) -> None:
        self.hang = set(hang)
        self.fail = fail
        self.gap_s = gap_s
        """Pause between two results, as separate gRPC messages arrive apart."""
        self.batches: list[list[common_pb2.ToolCall]] = []

    async def execute(
        self,
        calls: Sequence[common_pb2.ToolCall],
        timeout_s: float,
        rpc_timeout_s: float,
        scope: str = "",
        *,
        serial: bool = False,
        injected: common_pb2.InjectedContext | None = None,
    ) -> AsyncIterator[tools_pb2.ExecuteResponse]:
        """Start events for all calls, then their results in order."""
        self.batches.append(list(calls))
        for c in calls:
            started = tools_pb2.ToolStarted(tool_call_id=c.id, name=c.name, arguments_json=c.arguments_json)
            yield tools_pb2.ExecuteResponse(started=started)
        for c in calls:
            if self.fail is not None:
                raise self.fail
            if c.name in self.hang:
                await asyncio.Event().wait()
            if self.gap_s:
                await asyncio.sleep(self.gap_s)
            result = common_pb2.ToolResult(
                tool_call_id=c.id, name=c.name, content=f"{c.name}: {c.arguments_json}"
            )
            yield tools_pb2.ExecuteResponse(finished=result)


@dataclass
class Harness:
    """One run, ready for `run_graph` or a single node, on its own SQLite store."""

    store: SqlStore
    state: RunState
    ctx: RunContext
    reasoner: FakeReasoner
    tools: FakeTools
    specs: list[common_pb2.ToolSpec] = field(default_factory=list)

    async def events(self) -> list[agent_pb2.RunEvent]:
        """Every event the run stored."""
        return await self.store.events(self.state.run_id, 0)

    def pending(self) -> list[agent_pb2.RunEvent]:
        """Events emitted since the last checkpoint (a node called on its own)."""
        return self.ctx.sink.drain()


async def harness(
    tmp_path: Path,
    reasoner: FakeReasoner | None = None,
    tools: FakeTools | None = None,
    *,
    question: str = "what is 2 + 2?",
    specs: Sequence[common_pb2.ToolSpec] = (),
    **config: Any,
) -> Harness:
    """A RUNNING run owned by this process, its state holding the system prompt.

    `config` sets RunConfig fields (streaming is off unless asked for).
    """
    store = await open_store(f"sqlite+aiosqlite:///{tmp_path / 'agentloop.db'}")
    await store.create_thread("thread-1", "ana")
    request = agent_pb2.RunRequest(input=question, user_id="ana", thread_id="thread-1")
    row = await store.create_run(
        "run-1", "thread-1", "ana", request.SerializeToString(), owner=OWNER, lease_s=60
    )
    base = RunConfig(system_prompt="You are a test.", stream_mode=agent_pb2.STREAM_MODE_NONE)
    settings = dataclasses.replace(base, **config)
    state = RunState(run_id="run-1", thread_id="thread-1", user_id="ana", config=settings)
    state.messages = [common_pb2.Message(role=common_pb2.ROLE_SYSTEM, content=settings.system_prompt)]
    sink = EventSink("run-1", "thread-1")
    sink.reserved_upto(row.sequence_reserved)
    cancel = asyncio.Event()
    reasoner = reasoner or FakeReasoner()
    tools = tools or FakeTools()
    ctx = RunContext(
        reasoner=cast(ReasonerClient, reasoner),
        tools=cast(ToolsClient, tools),
        sink=sink,
        journal=RunJournal(store, OWNER, sink, cancel, retry_budget_s=1.0),
        tool_specs=list(specs),
        new_messages=[common_pb2.Message(role=common_pb2.ROLE_USER, content=question)],
        step_timeout_s=5.0,
        cancel=cancel,
    )
    return Harness(store, state, ctx, reasoner, tools, list(specs))


@pytest.fixture
async def new_run(tmp_path: Path) -> AsyncIterator[Callable[..., Awaitable[Harness]]]:
    """`await new_run(reasoner, tools, **config)`: a Harness whose store is closed after the test."""
    made: list[Harness] = []

    async def make(*args: Any, **kwargs: Any) -> Harness:
        made.append(await harness(tmp_path, *args, **kwargs))
        return made[-1]

    yield make
    for h in made:
        await h.store.close()


def kinds(events: Sequence[agent_pb2.RunEvent]) -> list[str]:
    """Which event each one is (node_start, tool_end, final, ...)."""
    return [e.WhichOneof("event") or "" for e in events]
