"""The Agent gRPC service: thin handlers over the RunManager.

Every handler runs after the one access check (gateway.api.access: the caller resolved, its ids
bounded); handlers delegate and translate (gateway.journal.convert); the run itself lives in the
manager, so a stream that ends (client gone, deadline) never leaves a run half-recorded.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Any

import grpc
from google.protobuf.message import Message

from agentloop.kernel.errors import AgentloopError, FailedPrecondition, InvalidArgument, NotFound, Reason
from agentloop.v1 import agent_pb2, agent_pb2_grpc, common_pb2
from gateway.api.access import access_checked
from gateway.api.paging import PageTokens, Position, page_size
from gateway.journal.budget import (
    PREVIEW_CHARS,
    RESPONSE_BYTES,
    Budget,
    bounded_final,
    bounded_reply,
    message_part,
)
from gateway.journal.convert import (
    STATUS_TO_PROTO,
    checkpoint_to_proto,
    final_event,
    memory_to_proto,
    run_info,
    status_code,
    timestamp,
)
from gateway.runs.active import ActiveRun
from gateway.runs.forking import fork
from gateway.runs.manager import RunManager, deadline_from
from gateway.store.base import CheckpointRow, RequestReplayed, RunRow, ThreadRow

log = logging.getLogger(__name__)

SERVICE_NAME = agent_pb2.DESCRIPTOR.services_by_name["Agent"].full_name
THREAD_PREVIEW_CHARS = 200
_MESSAGE_BATCH = 32
"""Messages GetThread reads from the store at a time while it fills a page's byte budget."""


def _moment(value: str | int) -> datetime:
    """A timestamp of a page position (written by `_position`; the token's MAC vouches for it)."""
    try:
        when = datetime.fromisoformat(str(value))
    except ValueError:
        raise InvalidArgument("page_token", "is not a token of a previous response to this request") from None
    if when.tzinfo is None:
        raise InvalidArgument("page_token", "is not a token of a previous response to this request")
    return when


def _after(position: Position | None) -> tuple[datetime, str] | None:
    """The (timestamp, id) keyset position a token of ListThreads, ListRuns or ListMemories holds."""
    return None if position is None else (_moment(position[0]), str(position[1]))


def _position(when: datetime, key: str) -> Position:
    return [when.isoformat(), key]


def parse_checkpoint_id(value: str, field: str) -> tuple[str, int]:
    """("run id", index) from "<run_id>:<index>"."""
    run_id, _, index = value.rpartition(":")
    if not run_id or not (index.isascii() and index.isdigit()) or int(index) >= 2**31:
        raise InvalidArgument(field, f"{value!r} is not a checkpoint id (<run_id>:<index>)")
    return run_id, int(index)


@access_checked(agent_pb2.DESCRIPTOR.services_by_name["Agent"])
class AgentService(agent_pb2_grpc.AgentServicer):
    """Serves the Agent contract over a RunManager."""

    def __init__(self, manager: RunManager) -> None:
        self.manager = manager
        self._page_tokens: PageTokens | None = None

    async def _tokens(self) -> PageTokens:
        """The page tokens of this deployment (their key is read from the store once)."""
        if self._page_tokens is None:
            self._page_tokens = await PageTokens.of(self.manager.store)
        return self._page_tokens

    @property
    def active_runs(self) -> int:
        """Runs executing in this gateway process."""
        return self.manager.active_runs

    async def _stream(
        self, active: ActiveRun, after_sequence: int, cancel_on_disconnect: bool
    ) -> AsyncIterator[agent_pb2.RunEvent]:
        finished = False
        try:
            async for event in self.manager.follow(active, after_sequence):
                yield event
            finished = True
        finally:
            if not finished and cancel_on_disconnect and not active.done.is_set():
                log.info("run %s: client went away, cancelling as asked", active.run_id)
                active.cancel.set()

    async def Run(
        self, request: agent_pb2.RunRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[agent_pb2.RunResponse]:
        try:
            active = await self.manager.begin(
                request, streaming=True, deadline=deadline_from(context.time_remaining())
            )
        except RequestReplayed as replay:
            # A retry: the run this request_id started, from its first event.
            async for event in self.manager.watch(replay.run_id, request.user_id, 0):
                yield agent_pb2.RunResponse(event=event)
            return
        async for event in self._stream(active, 0, request.options.cancel_on_disconnect):
            yield agent_pb2.RunResponse(event=event)

    async def Invoke(
        self, request: agent_pb2.InvokeRequest, context: grpc.aio.ServicerContext
    ) -> agent_pb2.InvokeResponse:
        try:
            active = await self.manager.begin(
                request, streaming=False, deadline=deadline_from(context.time_remaining())
            )
        except RequestReplayed as replay:
            replayed = await self.manager.store.get_run(replay.run_id)
            assert replayed is not None
            events = self.manager.watch(replay.run_id, request.user_id, 0)
            return await self._outcome(replay.run_id, replayed.thread_id, events)
        try:
            await asyncio.shield(active.done.wait())
        except asyncio.CancelledError:
            if request.options.cancel_on_disconnect:
                active.cancel.set()
            raise
        if active.handed_over:
            events = self.manager.follow(active, active.sink.sequence)
            return await self._outcome(active.run_id, active.thread_id, events)
        state = active.state
        if state.error is not None:
            failure = state.error
            err = AgentloopError(
                f"run failed in {failure.node}: {failure.message}",
                reason=Reason.RUN_FAILED,
                metadata={"run_id": state.run_id, "thread_id": state.thread_id, "node": failure.node},
            )
            err.code = grpc.StatusCode[failure.code]
            raise err
        return _invoke_response(state.run_id, state.thread_id, final_event(state), state.tool_result_history)

    async def _outcome(
        self, run_id: str, thread_id: str, events: AsyncIterator[agent_pb2.RunEvent]
    ) -> agent_pb2.InvokeResponse:
        """The outcome of a run followed to its end (taken over by another gateway, or a retried request)."""
        outcome: agent_pb2.RunEvent | None = None
        async for event in events:
            if event.WhichOneof("event") in ("final", "error"):
                outcome = event
        if outcome is None or outcome.WhichOneof("event") != "final":
            error = outcome.error if outcome is not None else None
            err = AgentloopError(f"run failed in {error.node}: {error.message}" if error else "run ended")
            err.code = status_code(error.code) if error else grpc.StatusCode.ABORTED
            raise err
        results = await self.manager.store.tool_results(run_id)
        return _invoke_response(run_id, thread_id, outcome.final, list(results.values()))

    async def GetThread(
        self, request: agent_pb2.GetThreadRequest, context: grpc.aio.ServicerContext
    ) -> agent_pb2.GetThreadResponse:
        store = self.manager.store
        thread = await self.manager.owned_thread(request.thread_id, request.user_id)
        response = agent_pb2.GetThreadResponse(
            thread_id=thread.thread_id,
            user_id=thread.user_id,
            created_at=timestamp(thread.created_at),
            updated_at=timestamp(thread.updated_at),
        )
        size = page_size(request.page_size)
        binding = (thread.user_id, thread.thread_id, request.checkpoint_id)
        position = (await self._tokens()).read("GetThread", binding, request.page_token, (int, int, int))
        start, content_at, reasoning_at = (int(v) for v in position) if position else (0, 0, 0)
        total = thread.message_count
        run: RunRow | None
        checkpoint: CheckpointRow | None
        if request.checkpoint_id:
            run, checkpoint = await self._thread_checkpoint(request.checkpoint_id, thread)
            total = checkpoint.record.message_count
        else:
            run = await store.latest_run(thread.thread_id, user_id=thread.user_id)
            checkpoint = await store.latest_checkpoint(run.run_id) if run is not None else None
        response.total_messages = total
        if run is not None:
            response.state.CopyFrom(run_info(run, checkpoint, self.manager.default_max_steps))
            bounded_reply(response.state)
        budget = Budget(RESPONSE_BYTES - response.ByteSize())
        index, content_at, reasoning_at = await self._message_page(
            response, thread, min(total, start + size), (start, content_at, reasoning_at), budget
        )
        if index < total:
            after: Position = [index, content_at, reasoning_at]
            response.next_page_token = (await self._tokens()).issue("GetThread", binding, after)
        return response

    async def _message_page(
        self,
        response: agent_pb2.GetThreadResponse,
        thread: ThreadRow,
        end: int,
        at: tuple[int, int, int],
        budget: Budget,
    ) -> tuple[int, int, int]:
        """Fill `response.messages` from position `at` up to message `end` within `budget`.

        Messages come whole; a page ends before one that does not fit in what
        is left. Only a message too big for any page (the page's first) is
        cut, and continues on the next page. Returns where the next page
        starts: (message index, content offset, reasoning offset).
        """
        index, content_at, reasoning_at = at
        response.first_message_continued = bool(content_at or reasoning_at)
        while index < end:
            batch = await self.manager.store.thread_messages(
                thread.thread_id, min(_MESSAGE_BATCH, end - index), user_id=thread.user_id, offset=index
            )
            if not batch:  # fewer messages than counted: nothing more to read
                return end, 0, 0
            for message in batch:
                if response.messages:  # later messages come whole, or on the next page
                    if not budget.take(message.ByteSize()):
                        return index, 0, 0
                    response.messages.append(message)
                    index += 1
                    continue
                part = message_part(message, content_at, reasoning_at, max(budget.left, RESPONSE_BYTES // 2))
                # None: its tool calls alone fill a page (a gateway whose argument limit allows
                # that); it goes whole rather than never.
                piece, content_at, reasoning_at = part or (message, -1, -1)
                budget.take(piece.ByteSize(), first=True)
                response.messages.append(piece)
                if content_at >= 0:
                    response.last_message_continues = True
                    return index, content_at, reasoning_at
                index, content_at, reasoning_at = index + 1, 0, 0
        return index, 0, 0

    async def _thread_checkpoint(self, checkpoint_id: str, thread: ThreadRow) -> tuple[RunRow, CheckpointRow]:
        """The run and checkpoint `checkpoint_id` names in `thread`; NOT_FOUND when it is not there."""
        store = self.manager.store
        run_id, index = parse_checkpoint_id(checkpoint_id, "checkpoint_id")
        checkpoint = await store.get_checkpoint(run_id, index)
        run = await store.get_run(run_id)
        if (
            checkpoint is None
            or run is None
            or run.user_id != thread.user_id
            or run.thread_id != thread.thread_id
        ):
            raise NotFound(
                f"checkpoint {checkpoint_id!r} not found in this thread",
                reason=Reason.CHECKPOINT_NOT_FOUND,
                metadata={"checkpoint_id": checkpoint_id},
            )
        return run, checkpoint

    async def ListCheckpoints(
        self, request: agent_pb2.ListCheckpointsRequest, context: grpc.aio.ServicerContext
    ) -> agent_pb2.ListCheckpointsResponse:
        size = page_size(request.page_size)
        tokens = await self._tokens()
        binding = (request.user_id, request.thread_id, request.run_id)
        position = tokens.read("ListCheckpoints", binding, request.page_token, (int,))
        await self.manager.owned_thread(request.thread_id, request.user_id)
        rows = await self.manager.store.list_checkpoints(
            request.thread_id,
            request.run_id or None,
            int(position[0]) if position else 0,
            size + 1,
            user_id=request.user_id,
        )
        response = agent_pb2.ListCheckpointsResponse()
        taken = _fill(response.checkpoints, [checkpoint_to_proto(r) for r in rows[:size]])
        if taken < len(rows):
            response.next_page_token = tokens.issue("ListCheckpoints", binding, [rows[taken - 1].position])
        return response

    async def Resume(
        self, request: agent_pb2.ResumeRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[agent_pb2.ResumeResponse]:
        replayed = await self._resumed_by(request)
        if replayed is not None:
            async for event in self.manager.watch(request.run_id, request.user_id, replayed):
                yield agent_pb2.ResumeResponse(event=event)
            return
        try:
            active = await self.manager.resume(
                request.run_id, request.user_id, list(request.decisions), request.request_id
            )
        except FailedPrecondition:
            # A concurrent attempt of the same Resume may have won: its claim recorded the
            # request id (wait for a claim in flight in this process to be decided).
            if not request.request_id:
                raise
            await self.manager.settled(request.run_id)
            if (replayed := await self._resumed_by(request)) is None:
                raise
            async for event in self.manager.watch(request.run_id, request.user_id, replayed):
                yield agent_pb2.ResumeResponse(event=event)
            return
        if request.request_id:
            await self.manager.store.mark_resumed(active.run_id, request.request_id, active.start_sequence)
        async for event in self._stream(active, active.start_sequence, False):
            yield agent_pb2.ResumeResponse(event=event)

    async def _resumed_by(self, request: agent_pb2.ResumeRequest) -> int | None:
        """Where the stream of the resumption `request.request_id` started, when that Resume already ran."""
        if not request.request_id:
            return None
        row = await self.manager.owned_run(request.run_id, request.user_id)
        return row.resume_sequence if row.resume_request_id == request.request_id else None

    async def Cancel(
        self, request: agent_pb2.CancelRequest, context: grpc.aio.ServicerContext
    ) -> agent_pb2.CancelResponse:
        status = await self.manager.cancel(request.run_id, request.user_id)
        return agent_pb2.CancelResponse(status=STATUS_TO_PROTO[status])

    async def ListMemories(
        self, request: agent_pb2.ListMemoriesRequest, context: grpc.aio.ServicerContext
    ) -> agent_pb2.ListMemoriesResponse:
        size = page_size(request.page_size)
        tokens = await self._tokens()
        binding = (request.user_id,)
        position = tokens.read("ListMemories", binding, request.page_token, (str, str))
        rows = await self.manager.store.list_memories(request.user_id, limit=size + 1, after=_after(position))
        response = agent_pb2.ListMemoriesResponse()
        memories = [memory_to_proto(m) for m in rows[:size]]
        taken = _fill(response.memories, memories)
        if taken < len(rows):
            last = rows[taken - 1]
            response.next_page_token = tokens.issue(
                "ListMemories", binding, _position(last.created_at, last.memory_id)
            )
        return response

    async def DeleteMemory(
        self, request: agent_pb2.DeleteMemoryRequest, context: grpc.aio.ServicerContext
    ) -> agent_pb2.DeleteMemoryResponse:
        if not request.memory_id:
            raise InvalidArgument("memory_id", "must not be empty")
        if not await self.manager.store.delete_memory(request.user_id, request.memory_id):
            raise NotFound(
                f"memory {request.memory_id!r} not found",
                reason=Reason.MEMORY_NOT_FOUND,
                metadata={"memory_id": request.memory_id},
            )
        return agent_pb2.DeleteMemoryResponse()

    async def ListThreads(
        self, request: agent_pb2.ListThreadsRequest, context: grpc.aio.ServicerContext
    ) -> agent_pb2.ListThreadsResponse:
        size = page_size(request.page_size)
        tokens = await self._tokens()
        binding = (request.user_id,)
        position = tokens.read("ListThreads", binding, request.page_token, (str, str))
        rows = await self.manager.store.list_threads(request.user_id, size + 1, _after(position))
        response = agent_pb2.ListThreadsResponse()
        taken = _fill(response.threads, [await self._thread_summary(row) for row in rows[:size]])
        if taken < len(rows):
            last = rows[taken - 1]
            response.next_page_token = tokens.issue(
                "ListThreads", binding, _position(last.updated_at, last.thread_id)
            )
        return response

    async def _thread_summary(self, thread: ThreadRow) -> agent_pb2.ThreadSummary:
        """A thread with its preview: the start of its last message and its latest run's status."""
        store = self.manager.store
        summary = agent_pb2.ThreadSummary(
            thread_id=thread.thread_id,
            created_at=timestamp(thread.created_at),
            updated_at=timestamp(thread.updated_at),
            message_count=thread.message_count,
        )
        if thread.message_count:
            last = await store.thread_messages(
                thread.thread_id, 1, user_id=thread.user_id, offset=thread.message_count - 1
            )
            summary.preview = last[0].content[:THREAD_PREVIEW_CHARS] if last else ""
        run = await store.latest_run(thread.thread_id, user_id=thread.user_id)
        if run is not None:
            summary.latest_run_id = run.run_id
            summary.latest_run_status = STATUS_TO_PROTO[run.status]
        return summary

    async def ListRuns(
        self, request: agent_pb2.ListRunsRequest, context: grpc.aio.ServicerContext
    ) -> agent_pb2.ListRunsResponse:
        size = page_size(request.page_size)
        tokens = await self._tokens()
        binding = (request.user_id, request.thread_id)
        position = tokens.read("ListRuns", binding, request.page_token, (str, str))
        await self.manager.owned_thread(request.thread_id, request.user_id)
        store = self.manager.store
        rows = await store.list_runs(request.thread_id, size + 1, _after(position), user_id=request.user_id)
        infos = []
        for run in rows[:size]:
            info = run_info(run, await store.latest_checkpoint(run.run_id), self.manager.default_max_steps)
            bounded_reply(info, max_chars=PREVIEW_CHARS)
            infos.append(info)
        response = agent_pb2.ListRunsResponse()
        taken = _fill(response.runs, infos)
        if taken < len(rows):
            last = rows[taken - 1]
            response.next_page_token = tokens.issue(
                "ListRuns", binding, _position(last.created_at, last.run_id)
            )
        return response

    async def ForkThread(
        self, request: agent_pb2.ForkThreadRequest, context: grpc.aio.ServicerContext
    ) -> agent_pb2.ForkThreadResponse:
        if not request.checkpoint_id:
            raise InvalidArgument("checkpoint_id", "must not be empty")
        await self.manager.owned_thread(request.thread_id, request.user_id)
        thread = await self.manager.store.get_thread(request.thread_id, user_id=request.user_id)
        assert thread is not None
        _, checkpoint = await self._thread_checkpoint(request.checkpoint_id, thread)
        forked = await fork(
            self.manager.store,
            thread,
            request.new_thread_id or uuid.uuid4().hex,
            checkpoint.record.message_count,
        )
        return agent_pb2.ForkThreadResponse(thread_id=forked.thread_id, message_count=forked.message_count)

    async def Watch(
        self, request: agent_pb2.WatchRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[agent_pb2.WatchResponse]:
        async for event in self.manager.watch(request.run_id, request.user_id, request.after_sequence):
            yield agent_pb2.WatchResponse(event=event)


def _fill(field: Any, items: Sequence[Message]) -> int:
    """Append to the repeated `field` the first of `items` that fit RESPONSE_BYTES; how many did."""
    budget = Budget()
    for i, item in enumerate(items):
        if not budget.take(item.ByteSize(), first=i == 0):
            return i
        field.append(item)
    return len(items)


def _invoke_response(
    run_id: str, thread_id: str, final: agent_pb2.RunFinal, results: Sequence[common_pb2.ToolResult]
) -> agent_pb2.InvokeResponse:
    """Invoke's answer within RESPONSE_BYTES: the (bounded) outcome, then the tool results that fit."""
    response = agent_pb2.InvokeResponse(run_id=run_id, thread_id=thread_id, final=bounded_final(final))
    budget = Budget(RESPONSE_BYTES - response.ByteSize())
    for result in results:
        if not budget.take(result.ByteSize()):
            response.tool_results_truncated = True
            break
        response.tool_results.append(result)
    return response
