"""Faults injected through the whole stack: every run ends with the right answer or one clear error.

- the ToolService process is killed -9 in the middle of a batch and restarted
  on the same port: the gateway retries UNAVAILABLE and re-issues only the
  calls that have no result yet;
- the model endpoint answers 500, 429, malformed JSON or a broken stream;
- Postgres becomes unreachable for a few seconds while a run is in a tool:
  the gateway's store writes are retried and the run finishes, fully recorded.

Nothing here synchronises on sleeps: faults are triggered by the run's own
events and recovery is awaited through the run's stream or assert_eventually.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from google.rpc import code_pb2
from sqlalchemy.engine import make_url

from agentloop.scripted_model import Fault, Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2
from tests.fixtures.slow_tools import LOG_ENV
from tests.support.postgres import fresh_postgres_database
from tests.support.processes import ServiceProcess
from tests.support.scripts import ADD_SCENARIO
from tests.support.stack import Stack, assert_numbered, final_of, kinds, start_stack, tokens_joined
from tests.support.tools import make_registry
from tests.support.waiting import assert_eventually

pytestmark = pytest.mark.integration


def assert_whole(events: Sequence[agent_pb2.RunEvent]) -> None:
    """Numbered from 1 (skips only before joined tokens), one terminal event (last), tools start and end."""
    assert_numbered(events)
    terminal = [k for k in kinds(events) if k in ("final", "error")]
    assert len(terminal) == 1, kinds(events)
    assert kinds(events)[-1] == terminal[0]
    started = Counter(e.tool_start.tool_call_id for e in events if e.WhichOneof("event") == "tool_start")
    ended = Counter(e.tool_end.tool_call_id for e in events if e.WhichOneof("event") == "tool_end")
    assert all(n == 1 for n in started.values()), started
    assert all(n == 1 for n in ended.values()), ended
    if terminal[0] == "final":
        assert set(started) == set(ended)


async def collect_until(
    stack: Stack,
    request: agent_pb2.RunRequest,
    trigger: Callable[[list[agent_pb2.RunEvent]], bool],
    on_trigger: Callable[[list[agent_pb2.RunEvent]], Any],
    deadline_s: float = 45,
    arrivals: list[float] | None = None,
) -> list[agent_pb2.RunEvent]:
    """All events of a Run; `on_trigger(events so far)` is awaited once, when `trigger(events)` holds.

    `arrivals`, if given, receives the monotonic time each event arrived at.
    """
    events: list[agent_pb2.RunEvent] = []
    fired = False
    async for response in stack.agent.Run(request, timeout=deadline_s):
        events.append(response.event)
        if arrivals is not None:
            arrivals.append(time.monotonic())
        if not fired and trigger(events):
            fired = True
            await on_trigger(list(events))
    assert fired, f"the fault was never injected; events: {kinds(events)}"
    return events


def seen(events: Sequence[agent_pb2.RunEvent], kind: str, tool: str) -> bool:
    """Whether a tool_start/tool_end event of `tool` is among `events`."""
    return any(e.WhichOneof("event") == kind and getattr(e, kind).name == tool for e in events)


def tool_started(tool: str) -> Callable[[list[agent_pb2.RunEvent]], bool]:
    return lambda events: seen(events, "tool_start", tool)


# --- 1. the ToolService killed mid-batch and restarted ------------------------------------------

BATCH_SCRIPT = Script(
    scenarios=(
        Scenario(
            match="batch",
            turns=(
                Turn(
                    tool_calls=(
                        ScriptedToolCall("quick_echo", {"text": "fast"}),
                        ScriptedToolCall("slow_echo", {"text": "slow", "seconds": 1.5}),
                    )
                ),
                Turn(content="Got {{tool:quick_echo}} and {{tool:slow_echo}}."),
            ),
        ),
    )
)


def tool_log(path: Path) -> list[tuple[int, str, str]]:
    if not path.exists():
        return []
    rows = [line.split(" ", 2) for line in path.read_text(encoding="utf-8").splitlines()]
    return [(int(pid), event, text) for pid, event, text in rows]


async def test_tool_service_killed_mid_batch_and_restarted_finishes_the_run(tmp_path: Path) -> None:
    log_path = tmp_path / "tools.log"
    tools = ServiceProcess("tools", ["--tools", "tests.fixtures.slow_tools"], env={LOG_ENV: str(log_path)})
    killed_during: list[list[agent_pb2.RunEvent]] = []

    def mid_batch(events: list[agent_pb2.RunEvent]) -> bool:
        # Both calls started; the quick one finished (its result is recorded), the slow one runs.
        return seen(events, "tool_start", "slow_echo") and seen(events, "tool_end", "quick_echo")

    async def kill_and_restart(events: list[agent_pb2.RunEvent]) -> None:
        await tools.kill()
        killed_during.append(events)
        await tools.start()

    try:
        await tools.start()
        # The gateway's own in-process tool service is left idle: its calls go to the child process.
        stack = await start_stack(
            BATCH_SCRIPT,
            gateway_overrides={
                "tools_addr": f"127.0.0.1:{tools.port}",
                "rpc_attempts": 40,
                "rpc_backoff_s": 0.2,
            },
        )
        try:
            request = agent_pb2.RunRequest(input="batch please", user_id="ana")
            events = await collect_until(stack, request, mid_batch, kill_and_restart)
        finally:
            await stack.close()
    finally:
        await tools.stop()

    assert_whole(events)
    final = final_of(events)
    assert final.final_reply == "Got quick fast and slow slow."
    assert final.metadata.steps_taken == 1
    # The slow call was cut short by the kill, before it had a result.
    seen_at_kill = killed_during[0]
    assert not seen(seen_at_kill, "tool_end", "slow_echo")
    # The first process ran both calls and finished only the quick one; the restarted process ran
    # only the unfinished slow call again. Nothing finished twice.
    first, second = (child.proc.pid for child in tools.children)
    log = tool_log(log_path)
    assert sorted((pid, e, t) for pid, e, t in log if pid == first) == [
        (first, "finish", "fast"),
        (first, "start", "fast"),
        (first, "start", "slow"),
    ]
    assert [(e, t) for pid, e, t in log if pid == second] == [("start", "slow"), ("finish", "slow")]
    results = {e.tool_end.name: e.tool_end.result for e in events if e.WhichOneof("event") == "tool_end"}
    assert results["slow_echo"].content == "slow slow"
    assert not results["slow_echo"].is_error
    # The transcript pairs every call with its result, in call order.
    calls = [c.id for m in final.run_messages for c in m.tool_calls]
    answered = [m.tool_call_id for m in final.run_messages if m.tool_call_id]
    assert calls == answered
    assert len(calls) == 2


# --- 2. model endpoint faults ------------------------------------------------------------------

MODEL_SCRIPT = Script(scenarios=(ADD_SCENARIO,))

ALL_STEPS = agent_pb2.STREAM_MODE_ALL_STEPS
NONE = agent_pb2.STREAM_MODE_NONE
FINAL_ONLY = agent_pb2.STREAM_MODE_FINAL_ONLY


@dataclass(frozen=True)
class ModelFaultCase:
    fault: Fault
    stream_mode: int
    error_code: str | None = None
    """None: the run must answer; else the code of the one error event it must end with."""
    message_part: str = ""
    partial_output: str = ""
    """Tokens the client saw before the error (a stream is never retried after its first token)."""


MODEL_FAULTS = {
    # The Reasoner's openai client retries 5xx and 429 itself (max_retries=2).
    "500_once": ModelFaultCase(Fault("status", status=500), FINAL_ONLY),
    "429_once": ModelFaultCase(Fault("status", status=429), FINAL_ONLY),
    "503_once_streamed": ModelFaultCase(Fault("status", status=503), ALL_STEPS),
    # A 200 whose body is not JSON: the Reasoner says UNAVAILABLE and the gateway retries the Step.
    "malformed_json_once": ModelFaultCase(Fault("malformed_json"), NONE),
    # A stream whose first chunk is not JSON fails before any token: the gateway retries the stream.
    "malformed_sse_once": ModelFaultCase(Fault("malformed_json"), ALL_STEPS),
    # The connection dropped before any response: the openai client retries it.
    "dropped_connection_once": ModelFaultCase(Fault("broken_stream"), NONE),
    # The stream broke after its first token reached the client: retrying would repeat visible
    # tokens, so the run ends with one error event instead.
    "broken_stream_after_first_token": ModelFaultCase(
        Fault("broken_stream"), ALL_STEPS, error_code="UNAVAILABLE", partial_output="This "
    ),
    "500_forever": ModelFaultCase(
        Fault("status", status=500, times=1000), FINAL_ONLY, error_code="UNAVAILABLE", message_part="500"
    ),
    "429_forever": ModelFaultCase(
        Fault("status", status=429, times=1000), NONE, error_code="RESOURCE_EXHAUSTED", message_part="429"
    ),
}


@pytest.mark.parametrize("case_name", sorted(MODEL_FAULTS))
async def test_model_endpoint_fault_ends_with_answer_or_one_clear_error(case_name: str) -> None:
    case = MODEL_FAULTS[case_name]
    registry, probe = make_registry()
    script = Script(scenarios=MODEL_SCRIPT.scenarios, faults=(case.fault,))
    stack = await start_stack(
        script,
        registry,
        reasoner_overrides={"max_retries": 2},
        gateway_overrides={"rpc_attempts": 3, "rpc_backoff_s": 0.05},
    )
    try:
        events = await stack.run("add please", stream_mode=case.stream_mode)
        pending = stack.model.pending_faults
        requests = stack.model.request_count
    finally:
        await stack.close()

    assert_whole(events)
    if case.error_code is None:
        final = final_of(events)
        assert final.final_reply == "It is 5."
        assert final.metadata.steps_taken == 1
        assert probe.calls["add"] == 1
        assert pending == 0
        # Every faulty request was answered again: more requests than model calls.
        assert requests > final.metadata.llm_calls
        if case.stream_mode == ALL_STEPS:
            tokens = "".join(e.llm_token.token for e in events if e.WhichOneof("event") == "llm_token")
            assert tokens == "It is 5."  # no partial or repeated output
        return
    last = events[-1]
    assert last.WhichOneof("event") == "error", kinds(events)
    assert last.error.code == code_pb2.Code.Value(case.error_code)
    assert last.error.node == "agent"
    assert case.message_part in last.error.message
    assert "final" not in kinds(events)
    tokens = "".join(e.llm_token.token for e in events if e.WhichOneof("event") == "llm_token")
    assert tokens == case.partial_output
    assert probe.calls["add"] == 0


# --- 3. the store unreachable for a few seconds --------------------------------------------------


class FlakyProxy:
    """A TCP proxy that can be cut: existing connections are reset and new ones refused until restored."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self._upstream = (upstream_host, upstream_port)
        self._server: asyncio.Server | None = None
        self._links: set[asyncio.Task[None]] = set()
        self._transports: set[asyncio.WriteTransport] = set()
        self.down = False
        self.refused = 0
        self.port = 0

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    def cut(self) -> None:
        self.down = True
        for transport in list(self._transports):
            transport.abort()

    def restore(self) -> None:
        self.down = False

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        self.cut()
        for task in list(self._links):
            task.cancel()
        await asyncio.gather(*self._links, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._links.add(task)
        try:
            if self.down:
                self.refused += 1
                writer.transport.abort()
                return
            try:
                up_reader, up_writer = await asyncio.open_connection(*self._upstream)
            except OSError:
                writer.transport.abort()
                return
            ends = (writer.transport, up_writer.transport)
            self._transports.update(ends)
            try:
                await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
            finally:
                for transport in ends:
                    transport.abort()
                    self._transports.discard(transport)
        finally:
            self._links.discard(task)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                if self.down:
                    break
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.transport.abort()


@pytest.fixture
async def postgres_behind_proxy() -> AsyncIterator[tuple[str, FlakyProxy]]:
    """A fresh Postgres database, and its URL through a proxy the test can cut."""
    async with fresh_postgres_database() as direct_url:
        url = make_url(direct_url)
        proxy = FlakyProxy(url.host or "127.0.0.1", url.port or 5432)
        await proxy.start()
        try:
            yield url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False), proxy
        finally:
            await proxy.close()


STORE_SCRIPT = Script(
    scenarios=(
        Scenario(
            match="store",
            turns=(
                Turn(tool_calls=(ScriptedToolCall("sleep_for", {"seconds": 1.0}),)),
                Turn(content="Done: {{tool:sleep_for}}."),
            ),
        ),
    )
)
OUTAGE_S = 3.0


async def test_store_unreachable_for_a_few_seconds_the_run_still_finishes_fully_recorded(
    postgres_behind_proxy: tuple[str, FlakyProxy],
) -> None:
    url, proxy = postgres_behind_proxy
    stack = await start_stack(STORE_SCRIPT, make_registry()[0], database_url=url)
    arrivals: list[float] = []
    restored_at: list[float] = []

    async def outage(_: list[agent_pb2.RunEvent]) -> None:
        # The run is inside its slow tool; its result is written to the store while the store is down.
        started = time.monotonic()
        proxy.cut()
        await assert_eventually(
            lambda: proxy.refused >= 2,
            timeout_s=10,
            message="the gateway never tried to reach the store during the outage",
        )
        remaining = OUTAGE_S - (time.monotonic() - started)
        if remaining > 0:
            await asyncio.sleep(remaining)  # the length of the outage, not a synchronisation point
        restored_at.append(time.monotonic())
        proxy.restore()

    try:
        request = agent_pb2.RunRequest(input="store please", user_id="ana")
        events = await collect_until(stack, request, tool_started("sleep_for"), outage, arrivals=arrivals)
        assert_whole(events)
        assert final_of(events).final_reply == "Done: slept 1.0."
        # The tool's result is announced only once it is stored: after the store came back.
        tool_end_at = next(
            t for e, t in zip(events, arrivals, strict=True) if e.WhichOneof("event") == "tool_end"
        )
        assert tool_end_at >= restored_at[0]
        run_id, thread_id = events[0].run_id, events[0].thread_id

        # Nothing was lost: the store holds the completed run, its whole transcript and every event.
        thread = await stack.agent.GetThread(
            agent_pb2.GetThreadRequest(thread_id=thread_id, user_id="ana"), timeout=10
        )
        assert thread.state.status == agent_pb2.RUN_STATUS_COMPLETED
        assert [m.content for m in thread.messages] == [m.content for m in final_of(events).run_messages]
        watched = [
            r.event
            async for r in stack.agent.Watch(agent_pb2.WatchRequest(run_id=run_id, user_id="ana"), timeout=10)
        ]
        assert [(e.sequence, e.WhichOneof("event")) for e in watched] == [
            (e.sequence, e.WhichOneof("event")) for e in tokens_joined(events)
        ]
    finally:
        with contextlib.suppress(Exception):
            proxy.restore()
        await stack.close()
    assert proxy.refused >= 2
