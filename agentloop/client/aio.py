"""`AgentClient`: the asyncio client of the agentloop gateway.

    async with AgentClient("127.0.0.1:50050") as client:
        async for event in client.run("What is 2 + 2?", thread_id="t1"):
            if isinstance(event, Token):
                print(event.text, end="")

Every method speaks client values (agentloop.client.events), never generated messages.
Streams (run, resume, watch) reattach by themselves: when the connection breaks after the
run's first event, the client calls Watch(run_id, after_sequence=<last seen>) and goes on,
so no event is lost or repeated. Run, Invoke and Resume carry a request id (a fresh one
per call unless the caller passes one), so a call whose connection breaks before its
first event (or before Invoke's answer) is sent again with the same id: the gateway
attaches the retry to the run the first attempt started instead of starting another.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import grpc

from agentloop.client import _convert
from agentloop.client import events as ev
from agentloop.client.errors import RETRYABLE, ClientError
from agentloop.kernel.retry import CLIENT_REATTACH_ATTEMPTS, CLIENT_REATTACH_BACKOFF_S, Backoff
from agentloop.kernel.settings import TlsSettings, client_token, gateway_addr
from agentloop.kernel.tls import open_channel
from agentloop.v1 import agent_pb2_grpc

T = TypeVar("T")

OpenStream = Callable[[float | None], Any]
"""Starts a server-streaming call with the given timeout; returns the call (an async iterable)."""


class AgentClient:
    """A connection to one gateway (or a load-balanced set of replicas).

    Args:
        address: host:port, an ip:port list or dns:///name:port; default AGENTLOOP_GATEWAY_ADDR
            (127.0.0.1:50050).
        token: bearer token sent as ``authorization: Bearer <token>`` on every call; default
            AGENTLOOP_TOKEN. With authentication on, the token decides the user.
        tls: certificates for a TLS gateway; default from AGENTLOOP_TLS_CA (and
            AGENTLOOP_TLS_CLIENT_CERT/KEY for mutual TLS). Plaintext when no CA is set.
        user_id: the user of every call unless a call names another (ignored by a gateway
            that authenticates: there the token's user applies).
        timeout: deadline in seconds of the short calls (get_thread, cancel, memories, ...).
        run_timeout: deadline of a whole run, resume or watch, reattaches included;
            None waits as long as the run lasts.
        reattach_attempts: how many times in a row a broken stream is reattached (or a call
            that broke before its first event is sent again) before the error is raised.
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        token: str | None = None,
        tls: TlsSettings | None = None,
        user_id: str = "",
        timeout: float = 30.0,
        run_timeout: float | None = None,
        reattach_attempts: int = CLIENT_REATTACH_ATTEMPTS,
        reattach_backoff_s: float = CLIENT_REATTACH_BACKOFF_S,
    ) -> None:
        self.address = address or gateway_addr()
        token = client_token() if token is None else token
        self._metadata = (("authorization", f"Bearer {token}"),) if token else None
        self._channel = open_channel(self.address, TlsSettings.from_env() if tls is None else tls)
        self._stub = agent_pb2_grpc.AgentStub(self._channel)
        self.user_id = user_id
        self.timeout = timeout
        self.run_timeout = run_timeout
        self.reattach_attempts = reattach_attempts
        self.reattach_backoff_s = reattach_backoff_s
        # reattach_backoff_s, then twice that, and so on, with no jitter.
        self._reattach_backoff = Backoff(reattach_backoff_s, jitter=0.0)

    async def __aenter__(self) -> AgentClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the connection; streams still open end with a ClientError (CANCELLED)."""
        await self._channel.close()

    # --- runs -------------------------------------------------------------------------------

    def run(
        self,
        input: str,
        *,
        thread_id: str = "",
        user_id: str | None = None,
        system: str | None = None,
        model: str | None = None,
        max_steps: int | None = None,
        stream: str = "final",
        tools: Sequence[str] | None = None,
        output_schema: Mapping[str, Any] | str | None = None,
        require_approval: Sequence[str] | None = None,
        timeout: float | None = None,
        options: Mapping[str, Any] | None = None,
        request_id: str | None = None,
    ) -> AsyncIterator[ev.Event]:
        """Start a run and yield its events until Final, Error or Interrupt (the stream then ends).

        Args:
            input: the user's message.
            thread_id: the conversation; empty starts a new thread (its id is on every event).
            system: system prompt; model: model name passed to the model endpoint.
            stream: "final" streams the answer's tokens, "all" every step's, "none" none.
            tools: restrict the run to these tools. require_approval: tool names ("*" = all)
                whose calls pause the run for approve / reject / edit.
            output_schema: a JSON Schema (dict or JSON text) the answer must satisfy; the
                validated object arrives as Final.structured_output.
            options: further RunOptions fields by name (serial_tools, disable_memory, ...).
            timeout: deadline of the whole run; default the client's run_timeout.
            request_id: the run's idempotency key; default a fresh UUID. The same key again
                (from the same user) attaches to the run it started, from its first event.

        Leaving the loop early does not stop the run (it goes on in the gateway; ``watch`` it
        or ``cancel`` it by the run_id of any event it yielded).
        """
        opts = _convert.run_options(
            system=system,
            model=model,
            max_steps=max_steps,
            stream=stream,
            tools=tools,
            output_schema=output_schema,
            require_approval=require_approval,
            extra=options,
        )
        user = self._user(user_id)
        request = _convert.run_request(input, thread_id, user, opts, _request_id(request_id))
        return self._stream(
            lambda t: self._stub.Run(request, timeout=t, metadata=self._metadata), user, timeout
        )

    async def invoke(
        self,
        input: str,
        *,
        thread_id: str = "",
        user_id: str | None = None,
        system: str | None = None,
        model: str | None = None,
        max_steps: int | None = None,
        tools: Sequence[str] | None = None,
        output_schema: Mapping[str, Any] | str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 (a gRPC deadline the gateway sees too)
        options: Mapping[str, Any] | None = None,
        request_id: str | None = None,
    ) -> ev.RunResult:
        """Run to the end without streaming and return the outcome (the same options as ``run``).

        A call whose connection breaks (UNAVAILABLE, a reset) is sent again with the same
        request id, so the retry waits for the run the first attempt started.
        """
        opts = _convert.run_options(
            system=system,
            model=model,
            max_steps=max_steps,
            tools=tools,
            output_schema=output_schema,
            extra=options,
        )
        user = self._user(user_id)
        request = _convert.invoke_request(input, thread_id, user, opts, _request_id(request_id))
        response = await self._retried_unary(self._stub.Invoke, request, timeout or self.run_timeout)
        return _convert.invoke_result(response)

    def resume(
        self,
        run_id: str,
        decisions: Iterable[ev.ToolDecision] = (),
        *,
        user_id: str | None = None,
        timeout: float | None = None,
        request_id: str | None = None,
    ) -> AsyncIterator[ev.Event]:
        """Continue a paused run with one decision per pending call (approve / reject / edit),
        or an interrupted one (its gateway died) with none; yields its events like ``run``.
        ``request_id`` (default a fresh UUID) makes a retry stream the same resumption."""
        user = self._user(user_id)
        request = _convert.resume_request(run_id, user, decisions, _request_id(request_id))
        return self._stream(
            lambda t: self._stub.Resume(request, timeout=t, metadata=self._metadata), user, timeout
        )

    def watch(
        self,
        run_id: str,
        *,
        after_sequence: int = 0,
        user_id: str | None = None,
        timeout: float | None = None,
    ) -> AsyncIterator[ev.Event]:
        """A run's events after ``after_sequence`` (0 = all), stored ones first, then live ones,
        until the run ends or pauses (a resumed run's earlier Interrupt events are replayed
        too). Works during and after the run, from any gateway."""
        user = self._user(user_id)
        request = _convert.watch_request(run_id, user, after_sequence)
        return self._stream(
            lambda t: self._stub.Watch(request, timeout=t, metadata=self._metadata), user, timeout
        )

    async def pending(self, run_id: str, *, user_id: str | None = None) -> ev.Interrupt | None:
        """The Interrupt a paused run waits on, or None when the run ended otherwise.

        Reads the run's stored events (Watch from 0), so on a running run it waits until the
        run pauses or ends.
        """
        found: ev.Interrupt | None = None
        async for event in self.watch(run_id, user_id=user_id):
            if _still_paused(found is not None, event):
                found = event if isinstance(event, ev.Interrupt) else found
            else:
                found = None
        return found

    async def cancel(self, run_id: str, *, user_id: str | None = None) -> str:
        """Ask a run to stop at its next safe point; returns its status after the request
        (CANCELLED, the final status of a run that had ended, or RUNNING while another
        gateway reaches its safe point)."""
        request = _convert.cancel_request(run_id, self._user(user_id))
        response = await self._unary(self._stub.Cancel, request)
        return _convert.run_status(response.status)

    # --- threads, runs, checkpoints -------------------------------------------------------------

    async def get_thread(
        self, thread_id: str, *, checkpoint_id: str = "", user_id: str | None = None
    ) -> ev.Thread:
        """A thread's conversation and its latest run (or both as of ``checkpoint_id``).
        ClientError NOT_FOUND for an unknown thread or one of another user."""
        request = _convert.thread_request(thread_id, self._user(user_id), checkpoint_id)
        return _convert.thread(await self._unary(self._stub.GetThread, request))

    async def checkpoints(
        self, thread_id: str, *, run_id: str = "", user_id: str | None = None, limit: int = 10_000
    ) -> list[ev.Checkpoint]:
        """A thread's checkpoints (only ``run_id``'s when given), oldest first, at most ``limit``."""
        user = self._user(user_id)
        return await self._pages(
            lambda token, size: self._stub.ListCheckpoints(
                _convert.checkpoints_request(thread_id, user, run_id, token, size),
                timeout=self.timeout,
                metadata=self._metadata,
            ),
            _convert.checkpoints,
            limit,
        )

    async def list_runs(
        self, thread_id: str, *, user_id: str | None = None, limit: int = 10_000
    ) -> list[ev.RunInfo]:
        """The runs of a thread, newest first, each as of its latest checkpoint, at most
        ``limit``. ClientError NOT_FOUND for an unknown thread or one of another user."""
        user = self._user(user_id)
        return await self._pages(
            lambda token, size: self._stub.ListRuns(
                _convert.runs_request(thread_id, user, token, size),
                timeout=self.timeout,
                metadata=self._metadata,
            ),
            _convert.runs,
            limit,
        )

    async def list_threads(self, *, user_id: str | None = None, limit: int = 1000) -> list[ev.ThreadSummary]:
        """The user's threads, most recently updated first, at most ``limit``, each with a
        preview of its last message and its latest run's status."""
        user = self._user(user_id)
        return await self._pages(
            lambda token, size: self._stub.ListThreads(
                _convert.threads_request(user, token, size), timeout=self.timeout, metadata=self._metadata
            ),
            _convert.threads,
            limit,
        )

    async def fork(
        self,
        thread_id: str,
        checkpoint_id: str,
        new_thread_id: str | None = None,
        *,
        user_id: str | None = None,
    ) -> str:
        """Copy ``thread_id`` as of ``checkpoint_id`` (from ``checkpoints``) into a new thread
        and return its id: the gateway's choice unless ``new_thread_id`` is given. Runs on
        the copy never change the original. ClientError NOT_FOUND for an unknown thread or
        checkpoint, ALREADY_EXISTS when ``new_thread_id`` is taken."""
        request = _convert.fork_request(thread_id, self._user(user_id), checkpoint_id, new_thread_id or "")
        response = await self._unary(self._stub.ForkThread, request)
        return str(response.thread_id)

    # --- memories ------------------------------------------------------------------------------

    async def memories(self, *, user_id: str | None = None) -> list[ev.Memory]:
        """The user's long-term memories, newest first."""
        request = _convert.memories_request(self._user(user_id))
        return _convert.memories(await self._unary(self._stub.ListMemories, request))

    async def delete_memory(self, memory_id: str, *, user_id: str | None = None) -> None:
        """Delete one memory; ClientError NOT_FOUND when the user has no such memory."""
        await self._unary(
            self._stub.DeleteMemory, _convert.delete_memory_request(self._user(user_id), memory_id)
        )

    # --- plumbing ----------------------------------------------------------------------------------

    def _user(self, user_id: str | None) -> str:
        return self.user_id if user_id is None else user_id

    async def _unary(self, method: Any, request: Any, deadline_s: float | None = None) -> Any:
        try:
            return await method(request, timeout=deadline_s or self.timeout, metadata=self._metadata)
        except grpc.aio.AioRpcError as exc:
            raise ClientError.from_rpc(exc) from None

    async def _retried_unary(self, method: Any, request: Any, deadline_s: float | None) -> Any:
        """A unary call carrying a request id, sent again (same id) while its connection breaks."""
        deadline = time.monotonic() + (deadline_s or self.timeout)
        failures = 0
        while True:
            remaining = max(0.0, deadline - time.monotonic())
            try:
                return await method(request, timeout=remaining, metadata=self._metadata)
            except grpc.aio.AioRpcError as exc:
                if exc.code() not in RETRYABLE or failures >= self.reattach_attempts:
                    raise ClientError.from_rpc(exc) from None
            failures += 1
            await asyncio.sleep(self._reattach_backoff.delay_s(failures - 1))

    async def _pages(
        self, fetch: Callable[[str, int], Any], read: Callable[[Any], tuple[list[T], str]], limit: int
    ) -> list[T]:
        """Every page of a listing RPC, up to ``limit`` items."""
        found: list[T] = []
        token = ""
        while len(found) < limit:
            try:
                response = await fetch(token, min(1000, limit - len(found)))
            except grpc.aio.AioRpcError as exc:
                raise ClientError.from_rpc(exc) from None
            page, token = read(response)
            found.extend(page)
            if not token:
                break
        return found[:limit]

    async def _stream(
        self, start: OpenStream, user_id: str, deadline_s: float | None
    ) -> AsyncIterator[ev.Event]:
        """Yield a stream's events; after a break, reattach with Watch from the last sequence seen.

        A break before the first event starts the call again: Run and Resume carry a request
        id, so the gateway attaches the second attempt to the run the first one started.
        """
        timeout = deadline_s or self.run_timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        run_id, last, failures = "", 0, 0
        paused = False
        call = start(timeout)
        while True:
            problem: ClientError | None = None
            try:
                async for response in call:
                    event = _convert.event(response)
                    if run_id and event.sequence <= last:
                        continue  # already yielded before the reattach
                    run_id, last, failures = event.run_id, event.sequence, 0
                    paused = _still_paused(paused, event)
                    yield event
                    if isinstance(event, ev.Final | ev.Error):
                        return
                if paused:
                    return  # the gateway ends the stream of a paused run
            except grpc.aio.AioRpcError as exc:
                problem = ClientError.from_rpc(exc)
                if exc.code() not in RETRYABLE:
                    raise problem from None
            finally:
                call.cancel()
            if not run_id and problem is None:
                return  # an empty stream: nothing to reattach to
            failures = await self._before_reattaching(failures, problem, run_id)
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            call = self._reopened(start, run_id, user_id, last, remaining)

    async def _before_reattaching(self, failures: int, problem: ClientError | None, run_id: str) -> int:
        """Back off before the next attempt; the failures so far, counting this one.

        Once the attempts are spent the last problem is raised (or, for a
        stream that kept ending without one, UNAVAILABLE).
        """
        if failures >= self.reattach_attempts:
            if problem is not None:
                raise problem
            raise ClientError("UNAVAILABLE", f"the stream of run {run_id} kept ending early")
        failures += 1
        await asyncio.sleep(self._reattach_backoff.delay_s(failures - 1))
        return failures

    def _reopened(
        self, start: OpenStream, run_id: str, user_id: str, last: int, remaining: float | None
    ) -> Any:
        """The stream again: the same request if it broke before the first event, else Watch after `last`."""
        if not run_id:
            return start(remaining)
        request = _convert.watch_request(run_id, user_id, last)
        return self._stub.Watch(request, timeout=remaining, metadata=self._metadata)


def _request_id(given: str | None) -> str:
    """The caller's idempotency key, or a fresh one for this call (kept across its retries)."""
    return given if given else uuid.uuid4().hex


def _still_paused(paused: bool, event: ev.Event) -> bool:
    """Whether a run is paused after `event`: from its Interrupt until a node starts again."""
    if isinstance(event, ev.Interrupt):
        return True
    if isinstance(event, ev.NodeStarted | ev.Final | ev.Error):
        return False
    return paused
