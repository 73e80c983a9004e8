"""The executor: concurrency, bounds, timeouts, error results and cancellation."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from agentloop.v1 import common_pb2, tools_pb2
from tool_svc import ToolContext, ToolRegistry, tool
from tool_svc.executor import Event, execute

Kind = common_pb2.ToolErrorKind


def call(call_id: str, name: str, arguments_json: str = "") -> common_pb2.ToolCall:
    return common_pb2.ToolCall(id=call_id, name=name, arguments_json=arguments_json)


async def run(
    registry: ToolRegistry,
    calls: Sequence[common_pb2.ToolCall],
    timeout_s: float = 5,
    max_concurrency: int = 8,
) -> list[Event]:
    return [event async for event in execute(registry, calls, timeout_s, max_concurrency)]


def results(events: Sequence[Event]) -> dict[str, common_pb2.ToolResult]:
    return {event.tool_call_id: event for event in events if isinstance(event, common_pb2.ToolResult)}


def kinds(events: Sequence[Event]) -> list[str]:
    return [
        f"{'started' if isinstance(event, tools_pb2.ToolStarted) else 'finished'}:{event.tool_call_id}"
        for event in events
    ]


@dataclass
class Rendezvous:
    """Two tools that can only finish if they run at the same time."""

    arrived: dict[str, asyncio.Event] = field(
        default_factory=lambda: {"left": asyncio.Event(), "right": asyncio.Event()}
    )

    def registry(self) -> ToolRegistry:
        @tool
        async def meet(side: str) -> str:
            """Arrive on one side and wait for the other."""
            other = "right" if side == "left" else "left"
            self.arrived[side].set()
            await self.arrived[other].wait()
            return f"{side} met {other}"

        return ToolRegistry([meet])


async def test_calls_run_concurrently() -> None:
    registry = Rendezvous().registry()
    events = await run(
        registry, [call("a", "meet", '{"side": "left"}'), call("b", "meet", '{"side": "right"}')], timeout_s=5
    )
    done = results(events)
    assert done["a"].content == "left met right"
    assert done["b"].content == "right met left"
    assert not done["a"].is_error
    assert not done["b"].is_error
    # Both started before either could finish.
    assert kinds(events)[:2] == ["started:a", "started:b"]


async def test_every_call_gets_one_started_then_one_finished_event() -> None:
    @tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    calls = [call(str(i), "echo", f'{{"text": "t{i}"}}') for i in range(20)]
    events = await run(ToolRegistry([echo]), calls, max_concurrency=3)
    labels = kinds(events)
    assert len(labels) == 40
    for i in range(20):
        assert labels.count(f"started:{i}") == 1
        assert labels.count(f"finished:{i}") == 1
        assert labels.index(f"started:{i}") < labels.index(f"finished:{i}")
    assert {result.content for result in results(events).values()} == {f"t{i}" for i in range(20)}


async def test_started_event_carries_the_call() -> None:
    @tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    events = await run(ToolRegistry([echo]), [call("c1", "echo", '{"text": "hi"}')])
    started = events[0]
    assert isinstance(started, tools_pb2.ToolStarted)
    assert (started.tool_call_id, started.name, started.arguments_json) == ("c1", "echo", '{"text": "hi"}')


async def test_concurrency_is_bounded() -> None:
    release = asyncio.Event()
    active = 0
    peak = 0

    @tool
    async def hold() -> str:
        """Hold a slot until released."""
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await release.wait()
        active -= 1
        return "released"

    events: list[Event] = []
    async for event in execute(ToolRegistry([hold]), [call(str(i), "hold") for i in range(5)], 5, 2):
        events.append(event)
        if sum(isinstance(e, tools_pb2.ToolStarted) for e in events) == 2:
            release.set()
    labels = kinds(events)
    assert labels[:2] == ["started:0", "started:1"]
    # The third call only got a slot once one of the first two had finished.
    first_finish = next(i for i, label in enumerate(labels) if label.startswith("finished"))
    assert labels.index("started:2") > first_finish
    assert peak == 2
    assert all(not r.is_error for r in results(events).values())


async def test_request_timeout() -> None:
    @tool
    async def forever() -> str:
        """Never returns."""
        await asyncio.Event().wait()
        return "unreachable"

    (result,) = results(await run(ToolRegistry([forever]), [call("t", "forever")], timeout_s=0.05)).values()
    assert result.is_error
    assert result.error_kind == Kind.TOOL_ERROR_KIND_TIMEOUT
    assert result.content == "forever did not finish within 0.05 s and was stopped"
    assert result.duration.ToMilliseconds() >= 50


async def test_tool_timeout_wins_when_smaller() -> None:
    @tool(timeout_s=0.05)
    async def forever() -> str:
        """Never returns."""
        await asyncio.Event().wait()
        return "unreachable"

    (result,) = results(await run(ToolRegistry([forever]), [call("t", "forever")], timeout_s=30)).values()
    assert result.error_kind == Kind.TOOL_ERROR_KIND_TIMEOUT
    assert "within 0.05 s" in result.content


async def test_sync_tool_timeout_abandons_the_thread() -> None:
    gate = threading.Event()

    @tool
    def blocking() -> str:
        """Blocks its worker thread."""
        gate.wait(10)
        return "late"

    try:
        (result,) = results(
            await run(ToolRegistry([blocking]), [call("s", "blocking")], timeout_s=0.05)
        ).values()
    finally:
        gate.set()
    assert result.error_kind == Kind.TOOL_ERROR_KIND_TIMEOUT


async def test_tools_own_timeout_error_is_an_exception_not_a_timeout() -> None:
    @tool
    async def flaky() -> str:
        """Raises TimeoutError by itself."""
        raise TimeoutError("upstream took too long")

    (result,) = results(await run(ToolRegistry([flaky]), [call("f", "flaky")])).values()
    assert result.error_kind == Kind.TOOL_ERROR_KIND_EXCEPTION
    assert result.content == "TimeoutError: upstream took too long"


@pytest.mark.parametrize("is_async", [True, False])
async def test_exceptions_become_error_results_without_traceback(is_async: bool) -> None:
    def boom(reason: str) -> str:
        """Fails."""
        raise RuntimeError(reason)

    async def aboom(reason: str) -> str:
        """Fails."""
        raise RuntimeError(reason)

    registry = ToolRegistry()
    registry.register(tool(name="boom")(aboom if is_async else boom))
    (result,) = results(await run(registry, [call("x", "boom", '{"reason": "disk full"}')])).values()
    assert result.is_error
    assert result.error_kind == Kind.TOOL_ERROR_KIND_EXCEPTION
    assert result.content == "RuntimeError: disk full"
    assert "Traceback" not in result.content


async def test_exception_without_message() -> None:
    @tool
    def silent() -> str:
        """Fails quietly."""
        raise KeyError

    (result,) = results(await run(ToolRegistry([silent]), [call("x", "silent")])).values()
    assert result.content == "KeyError"


async def test_unknown_tool_lists_the_available_ones() -> None:
    @tool
    def alpha() -> str:
        """A."""
        return "a"

    @tool
    def beta() -> str:
        """B."""
        return "b"

    (result,) = results(await run(ToolRegistry([beta, alpha]), [call("u", "gamma")])).values()
    assert result.is_error
    assert result.error_kind == Kind.TOOL_ERROR_KIND_UNKNOWN_TOOL
    assert result.content == "unknown tool 'gamma'; available tools: alpha, beta"
    assert result.name == "gamma"


async def test_argument_errors_become_results() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    events = await run(
        ToolRegistry([add]),
        [
            call("m", "add", '{"a": 1, "b": }'),
            call("i", "add", '{"a": "one"}'),
            call("ok", "add", '{"a": 1, "b": 2}'),
        ],
    )
    done = results(events)
    assert done["m"].error_kind == Kind.TOOL_ERROR_KIND_MALFORMED_ARGUMENTS
    assert "at line 1 column 15" in done["m"].content
    assert done["i"].error_kind == Kind.TOOL_ERROR_KIND_INVALID_ARGUMENTS
    assert "$.a: 'one' is not of type 'integer'" in done["i"].content
    assert "$.b: is required" in done["i"].content
    assert done["ok"].content == "3"
    assert not done["ok"].is_error
    assert done["ok"].error_kind == Kind.TOOL_ERROR_KIND_NONE


async def test_result_encoding() -> None:
    @tool
    def as_text() -> str:
        """Plain text is passed through."""
        return "{not json, on purpose}"

    @tool
    def as_data() -> dict[str, object]:
        """Anything else is JSON."""
        return {"city": "Zürich", "when": dt.date(2024, 5, 1), "values": [1, 2.5, None, True]}

    @tool
    def nothing() -> None:
        """None is null."""

    done = results(
        await run(
            ToolRegistry([as_text, as_data, nothing]),
            [call("t", "as_text"), call("d", "as_data"), call("n", "nothing")],
        )
    )
    assert done["t"].content == "{not json, on purpose}"
    assert done["d"].content == '{"city": "Zürich", "when": "2024-05-01", "values": [1, 2.5, null, true]}'
    assert done["n"].content == "null"
    assert all(result.duration.ToMilliseconds() >= 0 for result in done.values())


async def test_context_is_injected() -> None:
    @tool(timeout_s=3)
    async def whoami(ctx: ToolContext) -> str:
        """Report the context."""
        return f"{ctx.tool_call_id} {ctx.tool_name} {ctx.timeout_s:g}"

    (result,) = results(await run(ToolRegistry([whoami]), [call("call-7", "whoami")], timeout_s=10)).values()
    assert result.content == "call-7 whoami 3"


async def test_sync_tools_run_off_the_event_loop_thread() -> None:
    @tool
    def thread_id() -> int:
        """The worker's thread id."""
        return threading.get_ident()

    (result,) = results(await run(ToolRegistry([thread_id]), [call("t", "thread_id")])).values()
    assert int(result.content) != threading.get_ident()


async def test_tool_cancelling_itself_is_reported_as_cancelled() -> None:
    @tool
    async def gives_up() -> str:
        """Its own inner work gets cancelled."""
        inner = asyncio.get_running_loop().create_future()
        inner.cancel()
        return str(await inner)

    (result,) = results(await run(ToolRegistry([gives_up]), [call("g", "gives_up")])).values()
    assert result.error_kind == Kind.TOOL_ERROR_KIND_CANCELLED


@dataclass
class Blocker:
    """A tool that blocks until cancelled and records that it was."""

    started: asyncio.Event = field(default_factory=asyncio.Event)
    cancelled: int = 0

    def registry(self) -> ToolRegistry:
        @tool
        async def block() -> str:
            """Wait forever."""
            self.started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
            return "unreachable"

        @tool
        def quick() -> str:
            """Return at once."""
            return "quick"

        return ToolRegistry([block, quick])


def other_tasks() -> set[asyncio.Task[object]]:
    return {task for task in asyncio.all_tasks() if task is not asyncio.current_task()}


async def test_closing_the_stream_cancels_running_calls() -> None:
    blocker = Blocker()
    calls = [call("b1", "block"), call("b2", "block"), call("q", "quick")]
    seen: list[Event] = []
    async with contextlib.aclosing(execute(blocker.registry(), calls, 30, 8)) as events:
        async for event in events:
            seen.append(event)
            if isinstance(event, common_pb2.ToolResult):
                break  # the quick call is done; walk away from the blocked ones
    assert kinds(seen)[-1] == "finished:q"
    assert blocker.cancelled == 2
    assert other_tasks() == set()


async def test_cancelling_the_consumer_cancels_running_calls() -> None:
    blocker = Blocker()

    async def consume() -> None:
        async for _event in execute(blocker.registry(), [call("b", "block")], 30, 8):
            pass

    consumer = asyncio.create_task(consume())
    await blocker.started.wait()
    consumer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await consumer
    assert blocker.cancelled == 1
    assert other_tasks() == set()


async def test_calls_waiting_for_a_slot_are_cancelled_too() -> None:
    blocker = Blocker()
    calls = [call(str(i), "block") for i in range(4)]
    async with contextlib.aclosing(execute(blocker.registry(), calls, 30, 1)) as events:
        first = await anext(events)
        assert isinstance(first, tools_pb2.ToolStarted)
    assert blocker.cancelled == 1
    assert other_tasks() == set()


@pytest.mark.parametrize(("timeout_s", "max_concurrency"), [(0, 1), (-1, 1), (1, 0)])
async def test_limits_are_checked(timeout_s: float, max_concurrency: int) -> None:
    with pytest.raises(ValueError, match="need timeout_s > 0 and max_concurrency >= 1"):
        await run(ToolRegistry(), [call("x", "y")], timeout_s, max_concurrency)


async def test_result_memo_stays_within_its_bounds() -> None:
    from agentloop.v1 import common_pb2 as pb
    from tool_svc.executor import ResultMemo

    memo = ResultMemo(capacity=2, max_bytes=10_000, ttl_s=60)
    for key in ("a", "b", "c"):
        memo.finish(key, memo.begin(key), pb.ToolResult(content="x"))
    assert memo.get("a") is None
    assert memo.get("c") is not None
    by_bytes = ResultMemo(capacity=100, max_bytes=50, ttl_s=60)
    by_bytes.finish("big1", by_bytes.begin("big1"), pb.ToolResult(content="y" * 30))
    by_bytes.finish("big2", by_bytes.begin("big2"), pb.ToolResult(content="y" * 30))
    assert by_bytes.get("big1") is None
    assert by_bytes.get("big2") is not None
    aged = ResultMemo(capacity=100, max_bytes=10_000, ttl_s=0)
    aged.finish("old", aged.begin("old"), pb.ToolResult(content="z"))
    assert aged.get("old") is None
