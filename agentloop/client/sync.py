"""`Client`: the same calls as AgentClient for code without an event loop.

    with Client("127.0.0.1:50050") as client:
        for event in client.run("What is 2 + 2?"):
            ...

It runs an AgentClient on a private event loop in a daemon thread and waits for each
call, so both clients share one implementation (reattach, deadlines, auth, TLS) and the
sync one works from any thread, including inside a program that has its own loop
elsewhere.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any, TypeVar

from agentloop.client import events as ev
from agentloop.client.aio import AgentClient

T = TypeVar("T")


class Client:
    """Blocking client; takes the arguments of AgentClient and offers its methods.

    Streams (run, resume, watch) are plain iterators; breaking out of one leaves the run
    going in the gateway, as with AgentClient.
    """

    def __init__(self, address: str | None = None, **kwargs: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="agentloop-client", daemon=True)
        self._thread.start()

        async def make() -> AgentClient:
            return AgentClient(address, **kwargs)

        self._async = self._call(make())

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection and stop the private loop."""
        if self._loop.is_closed():
            return
        self._call(self._async.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def _call(self, coro: Awaitable[T]) -> T:
        async def wrapped() -> T:
            return await coro

        return asyncio.run_coroutine_threadsafe(wrapped(), self._loop).result()

    def _iterate(self, make: Callable[[], Any]) -> Iterator[ev.Event]:
        stream = self._call(_make_async(make))
        try:
            while True:
                try:
                    yield self._call(stream.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            if not self._loop.is_closed():
                self._call(stream.aclose())

    @property
    def user_id(self) -> str:
        return self._async.user_id

    def run(self, input: str, **kwargs: Any) -> Iterator[ev.Event]:
        """AgentClient.run, as an iterator."""
        return self._iterate(lambda: self._async.run(input, **kwargs))

    def resume(
        self, run_id: str, decisions: Iterable[ev.ToolDecision] = (), **kwargs: Any
    ) -> Iterator[ev.Event]:
        """AgentClient.resume, as an iterator."""
        decided = list(decisions)
        return self._iterate(lambda: self._async.resume(run_id, decided, **kwargs))

    def watch(self, run_id: str, **kwargs: Any) -> Iterator[ev.Event]:
        """AgentClient.watch, as an iterator."""
        return self._iterate(lambda: self._async.watch(run_id, **kwargs))

    def invoke(self, input: str, **kwargs: Any) -> ev.RunResult:
        """AgentClient.invoke."""
        return self._call(self._async.invoke(input, **kwargs))

    def pending(self, run_id: str, **kwargs: Any) -> ev.Interrupt | None:
        """AgentClient.pending."""
        return self._call(self._async.pending(run_id, **kwargs))

    def cancel(self, run_id: str, **kwargs: Any) -> str:
        """AgentClient.cancel."""
        return self._call(self._async.cancel(run_id, **kwargs))

    def get_thread(self, thread_id: str, **kwargs: Any) -> ev.Thread:
        """AgentClient.get_thread."""
        return self._call(self._async.get_thread(thread_id, **kwargs))

    def checkpoints(self, thread_id: str, **kwargs: Any) -> list[ev.Checkpoint]:
        """AgentClient.checkpoints."""
        return self._call(self._async.checkpoints(thread_id, **kwargs))

    def list_runs(self, thread_id: str, **kwargs: Any) -> list[ev.RunInfo]:
        """AgentClient.list_runs."""
        return self._call(self._async.list_runs(thread_id, **kwargs))

    def list_threads(self, **kwargs: Any) -> list[ev.ThreadSummary]:
        """AgentClient.list_threads."""
        return self._call(self._async.list_threads(**kwargs))

    def fork(
        self, thread_id: str, checkpoint_id: str, new_thread_id: str | None = None, **kwargs: Any
    ) -> str:
        """AgentClient.fork."""
        return self._call(self._async.fork(thread_id, checkpoint_id, new_thread_id, **kwargs))

    def memories(self, **kwargs: Any) -> list[ev.Memory]:
        """AgentClient.memories."""
        return self._call(self._async.memories(**kwargs))

    def delete_memory(self, memory_id: str, **kwargs: Any) -> None:
        """AgentClient.delete_memory."""
        self._call(self._async.delete_memory(memory_id, **kwargs))


async def _make_async(make: Callable[[], Any]) -> Any:
    return make()
