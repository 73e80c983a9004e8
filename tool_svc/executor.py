"""Run one batch of tool calls: concurrently, bounded, each under its own timeout.

Whatever a call does (unknown tool, bad arguments, exception, timeout) becomes
an error result for the model to read; the batch itself never fails. Events
are yielded as they happen, so a client sees slow calls start and fast calls
finish without waiting for the whole batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from opentelemetry.trace import Status, StatusCode
from opentelemetry.util.types import AttributeValue

from agentloop.kernel.channels import MAX_MESSAGE_BYTES
from agentloop.kernel.telemetry import Telemetry
from agentloop.kernel.wellknown import duration
from agentloop.v1 import common_pb2, tools_pb2
from tool_svc.injected import InjectedValues
from tool_svc.registry import ArgumentError, ErrorKind, ResultTooLarge, Tool, ToolContext, ToolRegistry

log = logging.getLogger(__name__)

Event: TypeAlias = tools_pb2.ToolStarted | common_pb2.ToolResult
"""A call started (ToolStarted) or finished (ToolResult)."""

_MAX_ERROR_CHARS = 2000
_NO_INJECTED = InjectedValues()
DEFAULT_MAX_RESULT_BYTES = 1024 * 1024
"""Largest result content one call may return (AGENTLOOP_MAX_RESULT_BYTES)."""
MAX_BATCH_RESULT_BYTES = MAX_MESSAGE_BYTES // 2
"""All results of one batch together: half the gRPC message limit, so the conversation that
carries them to the model next step still fits in one message."""


def memo_key(scope: str, call: common_pb2.ToolCall) -> str:
    """The memo's key of a call: its scope, its id and a digest of what it asks for.

    The gateway scopes calls by run and step, so only a re-issue of the same
    call of the same step matches: a model that reuses an id in a later step
    (or an endpoint that numbers ids from call_0 at every step) gets its new
    call run, never an older call's result.
    """
    digest = hashlib.sha256(f"{call.name}\0{call.arguments_json}".encode()).hexdigest()[:32]
    return f"{scope}:{call.id}:{digest}"


class ResultMemo:
    """Recent outcomes by memo key (see `memo_key`), so a re-issued call never runs twice.

    A gateway that crashed after a call finished but before it saved the
    result re-sends the call with the same scope, id, name and arguments: it
    gets the stored result (or joins the run still in progress). Re-issues come within a lease period or
    two, so entries live two minutes, and the memo is bounded in entries and
    bytes as well (memory stays flat under load). A call that was cancelled
    is forgotten, so it runs again when re-issued.
    """

    def __init__(self, capacity: int = 4096, max_bytes: int = 8 * 1024 * 1024, ttl_s: float = 120.0) -> None:
        self._capacity = capacity
        self._max_bytes = max_bytes
        self._ttl_s = ttl_s
        self._bytes = 0
        self._entries: OrderedDict[str, asyncio.Future[common_pb2.ToolResult]] = OrderedDict()
        self._sizes: dict[str, tuple[int, float]] = {}

    def get(self, key: str) -> asyncio.Future[common_pb2.ToolResult] | None:
        """The outcome (possibly still pending) of an earlier call with this key."""
        self._expire()
        future = self._entries.get(key)
        if future is not None:
            self._entries.move_to_end(key)
        return future

    def finish(
        self, key: str, future: asyncio.Future[common_pb2.ToolResult], result: common_pb2.ToolResult
    ) -> None:
        """Record a finished call; the memo stays within its entry, byte and age bounds."""
        future.set_result(result)
        size = len(result.content) + len(key)
        self._sizes[key] = (size, time.monotonic())
        self._bytes += size
        self._trim()

    def _trim(self) -> None:
        while self._entries and (len(self._entries) > self._capacity or self._bytes > self._max_bytes):
            key, _ = self._entries.popitem(last=False)
            self._bytes -= self._sizes.pop(key, (0, 0.0))[0]

    def _expire(self) -> None:
        cutoff = time.monotonic() - self._ttl_s
        while self._entries:
            key = next(iter(self._entries))
            size, finished = self._sizes.get(key, (0, float("inf")))
            if finished > cutoff:
                break
            self._entries.popitem(last=False)
            self._sizes.pop(key, None)
            self._bytes -= size

    def begin(self, key: str) -> asyncio.Future[common_pb2.ToolResult]:
        """Register a call about to run."""
        future: asyncio.Future[common_pb2.ToolResult] = asyncio.get_running_loop().create_future()
        self._entries[key] = future
        self._trim()
        return future

    def forget(self, key: str) -> None:
        """Drop a call that did not finish."""
        self._entries.pop(key, None)
        self._bytes -= self._sizes.pop(key, (0, 0.0))[0]


async def execute(
    registry: ToolRegistry,
    calls: Sequence[common_pb2.ToolCall],
    timeout_s: float,
    max_concurrency: int,
    scope: str = "",
    memo: ResultMemo | None = None,
    *,
    injected: common_pb2.InjectedContext | InjectedValues | None = None,
    telemetry: Telemetry | None = None,
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
) -> AsyncGenerator[Event, None]:
    """Run ``calls`` and yield a ToolStarted then a ToolResult per call, in the order they happen.

    At most ``max_concurrency`` calls run at once; a call's started event is
    emitted when it gets a slot. Each call is limited to ``timeout_s`` or its
    tool's own, smaller, timeout; a sync tool that times out keeps its worker
    thread busy until it returns (threads cannot be killed) and its result is
    discarded. Closing the iterator early (or cancelling its consumer) cancels
    and awaits every call still running; use ``contextlib.aclosing`` when you
    may stop before the end. With a ``scope`` and a ``memo``, calls are
    idempotent per (scope, id, name, arguments): see ResultMemo. ``injected`` supplies the
    values of the tools' injected parameters; its JSON fields are parsed once
    for the whole batch (pass InjectedValues when already parsed), and a
    malformed one raises ValueError before any call starts. Each call that runs
    gets an "execute_tool <name>" span under the span current here, and its
    error results count into agentloop.tool.errors of ``telemetry``. A result
    whose content is over ``max_result_bytes``, or would take the batch's
    results over MAX_BATCH_RESULT_BYTES, becomes a TOO_LARGE error result.
    """
    if timeout_s <= 0 or max_concurrency < 1:
        raise ValueError(f"need timeout_s > 0 and max_concurrency >= 1, got {timeout_s}, {max_concurrency}")
    if not 0 < max_result_bytes <= MAX_BATCH_RESULT_BYTES:
        raise ValueError(f"need 0 < max_result_bytes <= {MAX_BATCH_RESULT_BYTES}, got {max_result_bytes}")
    values = injected if isinstance(injected, InjectedValues) else InjectedValues.from_context(injected)
    queue: asyncio.Queue[Event] = asyncio.Queue()
    semaphore = asyncio.Semaphore(max_concurrency)
    tasks = [
        asyncio.create_task(
            _run(
                registry,
                call,
                _Limits(timeout_s, max_result_bytes),
                semaphore,
                queue.put_nowait,
                scope,
                memo,
                values,
                telemetry,
            )
        )
        for call in calls
    ]
    try:
        pending = len(tasks)
        batch_bytes = 0
        while pending:
            event = await queue.get()
            if isinstance(event, common_pb2.ToolResult):
                pending -= 1
                event = _within_batch(event, batch_bytes)
                batch_bytes += _utf8_size(event.content)
            yield event
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


@dataclass(frozen=True, slots=True)
class _Limits:
    timeout_s: float
    max_result_bytes: int


def _utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode())


def _too_large(
    call: common_pb2.ToolCall, size: int, limit: int, what: str, start: float
) -> common_pb2.ToolResult:
    message = (
        f"the result of {call.name} is {size} bytes or more; {what} at most {limit} bytes. "
        "Call it again asking for less data (fewer rows, columns or items, or a narrower query)"
    )
    return _failure(call, common_pb2.TOOL_ERROR_KIND_TOO_LARGE, message, start)


def _within_batch(result: common_pb2.ToolResult, batch_bytes: int) -> common_pb2.ToolResult:
    """The result, or a TOO_LARGE error when it would take the batch over MAX_BATCH_RESULT_BYTES."""
    size = _utf8_size(result.content)
    if batch_bytes + size <= MAX_BATCH_RESULT_BYTES:
        return result
    call = common_pb2.ToolCall(id=result.tool_call_id, name=result.name)
    error = _too_large(call, size, MAX_BATCH_RESULT_BYTES, "the results of one step may hold together", 0.0)
    error.duration.CopyFrom(result.duration)
    return error


async def _run(
    registry: ToolRegistry,
    call: common_pb2.ToolCall,
    limits: _Limits,
    semaphore: asyncio.Semaphore,
    emit: Callable[[Event], None],
    scope: str = "",
    memo: ResultMemo | None = None,
    injected: InjectedValues | None = None,
    telemetry: Telemetry | None = None,
) -> None:
    key = f"{scope}:{call.id}" if scope else call.id
    if memo is not None and scope:
        entry = memo_key(scope, call)
        earlier = memo.get(entry)
        if earlier is not None:
            emit(
                tools_pb2.ToolStarted(
                    tool_call_id=call.id, name=call.name, arguments_json=call.arguments_json
                )
            )
            emit(await asyncio.shield(earlier))
            return
        future = memo.begin(entry)
        try:
            result = await _guarded(registry, call, limits, semaphore, emit, key, injected, telemetry)
        except BaseException:
            memo.forget(entry)
            if not future.done():
                future.cancel()
            raise
        memo.finish(entry, future, result)
        emit(result)
        return
    emit(await _guarded(registry, call, limits, semaphore, emit, key, injected, telemetry))


async def _guarded(
    registry: ToolRegistry,
    call: common_pb2.ToolCall,
    limits: _Limits,
    semaphore: asyncio.Semaphore,
    emit: Callable[[Event], None],
    key: str,
    injected: InjectedValues | None = None,
    telemetry: Telemetry | None = None,
) -> common_pb2.ToolResult:
    async with semaphore:
        emit(tools_pb2.ToolStarted(tool_call_id=call.id, name=call.name, arguments_json=call.arguments_json))
        start = time.perf_counter()
        with _tool_span(telemetry or Telemetry.noop(), call) as record:
            tool = registry.get(call.name)
            if tool is None:
                available = ", ".join(registry.names()) or "(none)"
                message = f"unknown tool {call.name!r}; available tools: {available}"
                return record(_failure(call, common_pb2.TOOL_ERROR_KIND_UNKNOWN_TOOL, message, start), False)
            return record(await _call(tool, call, limits, start, key, injected), True)


@contextlib.contextmanager
def _tool_span(
    telemetry: Telemetry, call: common_pb2.ToolCall
) -> Iterator[Callable[[common_pb2.ToolResult, bool], common_pb2.ToolResult]]:
    """The "execute_tool <name>" span (GenAI conventions); yields a function that records the result."""
    attributes: dict[str, AttributeValue] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.name,
        "gen_ai.tool.call.id": call.id,
        "gen_ai.tool.type": "function",
    }
    with telemetry.span(f"execute_tool {call.name}", attributes=attributes) as span:

        def record(result: common_pb2.ToolResult, known_tool: bool) -> common_pb2.ToolResult:
            span.set_attribute("agentloop.tool.duration_ms", result.duration.ToMilliseconds())
            if result.is_error:
                kind = error_kind_name(result.error_kind)
                span.set_attribute("error.type", kind)
                span.set_status(Status(StatusCode.ERROR, result.content[:200]))
                # A hallucinated tool name must not become a metric label.
                tool = call.name if known_tool else "(unknown)"
                telemetry.tool_errors.add(1, {"tool": tool, "kind": kind})
            return result

        yield record


def error_kind_name(kind: ErrorKind) -> str:
    """ "timeout" for TOOL_ERROR_KIND_TIMEOUT, "exception", "unknown_tool" and so on."""
    return common_pb2.ToolErrorKind.Name(kind).removeprefix("TOOL_ERROR_KIND_").lower()


async def _call(
    tool: Tool,
    call: common_pb2.ToolCall,
    limits: _Limits,
    start: float,
    key: str = "",
    injected: InjectedValues | None = None,
) -> common_pb2.ToolResult:
    """One call's outcome; only the consumer's cancellation escapes as an exception."""
    timeout_s = limits.timeout_s
    limit = timeout_s if tool.timeout_s is None else min(tool.timeout_s, timeout_s)
    deadline = asyncio.timeout(limit)
    try:
        kwargs = _arguments(tool, call, limit, key, injected)
        async with deadline:
            value = await tool.invoke(kwargs)
        content = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        size = _size(content, limits.max_result_bytes)
        if size > limits.max_result_bytes:
            return _too_large(call, size, limits.max_result_bytes, "a tool result may hold", start)
    except ArgumentError as exc:
        return _failure(call, exc.kind, exc.message, start)
    except ResultTooLarge as exc:
        return _too_large(call, exc.size, limits.max_result_bytes, "a tool result may hold", start)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        return _failure(call, common_pb2.TOOL_ERROR_KIND_CANCELLED, f"{tool.name} was cancelled", start)
    except Exception as exc:
        if isinstance(exc, TimeoutError) and deadline.expired():
            message = f"{tool.name} did not finish within {limit:g} s and was stopped"
            return _failure(call, common_pb2.TOOL_ERROR_KIND_TIMEOUT, message, start)
        return _raised(tool, call, exc, start)
    return common_pb2.ToolResult(
        tool_call_id=call.id,
        name=call.name,
        content=content,
        error_kind=common_pb2.TOOL_ERROR_KIND_NONE,
        duration=duration(time.perf_counter() - start),
    )


def _arguments(
    tool: Tool, call: common_pb2.ToolCall, limit: float, key: str, injected: InjectedValues | None
) -> dict[str, Any]:
    """The call's keyword arguments: the model's, validated, plus context and injected ones it never sees."""
    kwargs = tool.bind(call.arguments_json)
    if tool.context_param is not None:
        kwargs[tool.context_param] = ToolContext(call.id, tool.name, limit, key or call.id)
    for param, kind in tool.injected:
        kwargs[param] = (injected or _NO_INJECTED).value(kind)
    return kwargs


def _size(content: str, max_bytes: int) -> int:
    """The content's UTF-8 size, or its length when that alone is over `max_bytes` (no need to encode it)."""
    return len(content) if len(content) > max_bytes else _utf8_size(content)


def _raised(tool: Tool, call: common_pb2.ToolCall, exc: Exception, start: float) -> common_pb2.ToolResult:
    """A tool's exception as an error result the model can read; the traceback goes to the log only."""
    log.warning("tool %s (call %s) raised %s", tool.name, call.id, type(exc).__name__, exc_info=exc)
    text = str(exc)
    message = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return _failure(call, common_pb2.TOOL_ERROR_KIND_EXCEPTION, message, start)


def _failure(call: common_pb2.ToolCall, kind: ErrorKind, message: str, start: float) -> common_pb2.ToolResult:
    if len(message) > _MAX_ERROR_CHARS:
        message = message[: _MAX_ERROR_CHARS - 3] + "..."
    return common_pb2.ToolResult(
        tool_call_id=call.id,
        name=call.name,
        content=message,
        is_error=True,
        error_kind=kind,
        duration=duration(time.perf_counter() - start),
    )
