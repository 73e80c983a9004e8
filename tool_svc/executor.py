"""Run one batch of tool calls: concurrently, bounded, each under its own timeout.

Whatever a call does (unknown tool, bad arguments, exception, timeout) becomes
an error result for the model to read; the batch itself never fails. Events
are yielded as they happen, so a client sees slow calls start and fast calls
finish without waiting for the whole batch.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import TypeAlias

from agentloop.v1 import common_pb2, tools_pb2
from tool_svc.registry import ArgumentError, ErrorKind, Tool, ToolContext, ToolRegistry

log = logging.getLogger(__name__)

Event: TypeAlias = tools_pb2.ToolStarted | common_pb2.ToolResult
"""A call started (ToolStarted) or finished (ToolResult)."""

_MAX_ERROR_CHARS = 2000


class ResultMemo:
    """Recent outcomes by idempotency key ("<scope>:<call id>"), so a re-issued call never runs twice.

    A gateway that crashed after a call finished but before it saved the
    result re-sends the call with the same key: it gets the stored result (or
    joins the run still in progress). Bounded LRU; a call that was cancelled
    is forgotten, so it runs again when re-issued.
    """

    def __init__(self, capacity: int = 10_000) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[str, asyncio.Future[common_pb2.ToolResult]] = OrderedDict()

    def get(self, key: str) -> asyncio.Future[common_pb2.ToolResult] | None:
        """The outcome (possibly still pending) of an earlier call with this key."""
        future = self._entries.get(key)
        if future is not None:
            self._entries.move_to_end(key)
        return future

    def begin(self, key: str) -> asyncio.Future[common_pb2.ToolResult]:
        """Register a call about to run."""
        future: asyncio.Future[common_pb2.ToolResult] = asyncio.get_running_loop().create_future()
        self._entries[key] = future
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)
        return future

    def forget(self, key: str) -> None:
        """Drop a call that did not finish."""
        self._entries.pop(key, None)


async def execute(
    registry: ToolRegistry,
    calls: Sequence[common_pb2.ToolCall],
    timeout_s: float,
    max_concurrency: int,
    scope: str = "",
    memo: ResultMemo | None = None,
) -> AsyncGenerator[Event, None]:
    """Run ``calls`` and yield a ToolStarted then a ToolResult per call, in the order they happen.

    At most ``max_concurrency`` calls run at once; a call's started event is
    emitted when it gets a slot. Each call is limited to ``timeout_s`` or its
    tool's own, smaller, timeout; a sync tool that times out keeps its worker
    thread busy until it returns (threads cannot be killed) and its result is
    discarded. Closing the iterator early (or cancelling its consumer) cancels
    and awaits every call still running; use ``contextlib.aclosing`` when you
    may stop before the end. With a ``scope`` and a ``memo``, calls are
    idempotent per (scope, id): see ResultMemo.
    """
    if timeout_s <= 0 or max_concurrency < 1:
        raise ValueError(f"need timeout_s > 0 and max_concurrency >= 1, got {timeout_s}, {max_concurrency}")
    queue: asyncio.Queue[Event] = asyncio.Queue()
    semaphore = asyncio.Semaphore(max_concurrency)
    tasks = [
        asyncio.create_task(_run(registry, call, timeout_s, semaphore, queue.put_nowait, scope, memo))
        for call in calls
    ]
    try:
        pending = len(tasks)
        while pending:
            event = await queue.get()
            if isinstance(event, common_pb2.ToolResult):
                pending -= 1
            yield event
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _run(
    registry: ToolRegistry,
    call: common_pb2.ToolCall,
    timeout_s: float,
    semaphore: asyncio.Semaphore,
    emit: Callable[[Event], None],
    scope: str = "",
    memo: ResultMemo | None = None,
) -> None:
    key = f"{scope}:{call.id}" if scope else call.id
    if memo is not None and scope:
        earlier = memo.get(key)
        if earlier is not None:
            emit(
                tools_pb2.ToolStarted(
                    tool_call_id=call.id, name=call.name, arguments_json=call.arguments_json
                )
            )
            emit(await asyncio.shield(earlier))
            return
        future = memo.begin(key)
        try:
            result = await _guarded(registry, call, timeout_s, semaphore, emit, key)
        except BaseException:
            memo.forget(key)
            if not future.done():
                future.cancel()
            raise
        future.set_result(result)
        emit(result)
        return
    emit(await _guarded(registry, call, timeout_s, semaphore, emit, key))


async def _guarded(
    registry: ToolRegistry,
    call: common_pb2.ToolCall,
    timeout_s: float,
    semaphore: asyncio.Semaphore,
    emit: Callable[[Event], None],
    key: str,
) -> common_pb2.ToolResult:
    async with semaphore:
        emit(tools_pb2.ToolStarted(tool_call_id=call.id, name=call.name, arguments_json=call.arguments_json))
        start = time.perf_counter()
        tool = registry.get(call.name)
        if tool is None:
            available = ", ".join(registry.names()) or "(none)"
            message = f"unknown tool {call.name!r}; available tools: {available}"
            return _failure(call, common_pb2.TOOL_ERROR_KIND_UNKNOWN_TOOL, message, start)
        return await _call(tool, call, timeout_s, start, key)


async def _call(
    tool: Tool, call: common_pb2.ToolCall, timeout_s: float, start: float, key: str = ""
) -> common_pb2.ToolResult:
    """One call's outcome; only the consumer's cancellation escapes as an exception."""
    limit = timeout_s if tool.timeout_s is None else min(tool.timeout_s, timeout_s)
    deadline = asyncio.timeout(limit)
    try:
        kwargs = tool.bind(call.arguments_json)
        if tool.context_param is not None:
            kwargs[tool.context_param] = ToolContext(call.id, tool.name, limit, key or call.id)
        async with deadline:
            value = await tool.invoke(kwargs)
        content = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    except ArgumentError as exc:
        return _failure(call, exc.kind, exc.message, start)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        return _failure(call, common_pb2.TOOL_ERROR_KIND_CANCELLED, f"{tool.name} was cancelled", start)
    except Exception as exc:
        if isinstance(exc, TimeoutError) and deadline.expired():
            message = f"{tool.name} did not finish within {limit:g} s and was stopped"
            return _failure(call, common_pb2.TOOL_ERROR_KIND_TIMEOUT, message, start)
        log.warning("tool %s (call %s) raised %s", tool.name, call.id, type(exc).__name__, exc_info=exc)
        text = str(exc)
        message = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
        return _failure(call, common_pb2.TOOL_ERROR_KIND_EXCEPTION, message, start)
    return common_pb2.ToolResult(
        tool_call_id=call.id,
        name=call.name,
        content=content,
        duration_ms=(time.perf_counter() - start) * 1000.0,
    )


def _failure(call: common_pb2.ToolCall, kind: ErrorKind, message: str, start: float) -> common_pb2.ToolResult:
    if len(message) > _MAX_ERROR_CHARS:
        message = message[: _MAX_ERROR_CHARS - 3] + "..."
    return common_pb2.ToolResult(
        tool_call_id=call.id,
        name=call.name,
        content=message,
        is_error=True,
        error_kind=kind,
        duration_ms=(time.perf_counter() - start) * 1000.0,
    )
