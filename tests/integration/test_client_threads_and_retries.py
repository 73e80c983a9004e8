"""agentloop.client against the real services: listing threads and runs, forking, and the
request id that makes a call retried after a dropped connection attach to the run it started."""

from __future__ import annotations

import asyncio
import struct

import pytest

from agentloop.client import AgentClient, Client, ClientError, Final
from agentloop.scripted_model import Script
from agentloop.testing import running_stack
from tests.support.net import pipe
from tests.support.scripts import add_scenario
from tests.support.tools import make_registry

pytestmark = pytest.mark.integration

SCRIPT = Script(scenarios=(add_scenario(1, 2, "3 it is"),))
HTTP2_DATA = 0
"""The HTTP/2 frame type that carries gRPC messages (the events, Invoke's answer)."""


class FirstReplyDroppingProxy:
    """A TCP proxy in front of the gateway that cuts its FIRST connection just before the first
    gRPC message of the gateway's reply would reach the client (the first HTTP/2 DATA frame),
    as a network failing after the request got through and the run started; the client has
    seen no event then. Later connections pass untouched."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.connections = 0
        self.dropped = 0
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        first = self.connections == 1
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)

        async def replies() -> None:
            if first and await self._until_first_data(up_reader, writer):
                self.dropped += 1
                writer.transport.abort()
                up_writer.transport.abort()
                return
            await pipe(up_reader, writer)

        await asyncio.gather(pipe(reader, up_writer), replies())

    @staticmethod
    async def _until_first_data(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> bool:
        """Forward whole frames until a DATA frame comes (True, not forwarded) or the end (False)."""
        try:
            while True:
                header = await src.readexactly(9)
                length = int.from_bytes(header[:3], "big")
                kind = header[3]
                (stream,) = struct.unpack(">I", header[5:9])
                if kind == HTTP2_DATA and stream & 0x7FFFFFFF:
                    return True
                dst.write(header + await src.readexactly(length))
                await dst.drain()
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            return False


async def test_threads_newest_first_runs_newest_first_and_a_fork_branches_off() -> None:
    registry, _ = make_registry()
    async with running_stack(SCRIPT, registry=registry) as stack, stack.client(user_id="ana") as client:
        first = [e async for e in client.run("add 1 and 2", thread_id="lt-a")][-1]
        again = await client.invoke("add them again", thread_id="lt-a")
        other = await client.invoke("hello", thread_id="lt-b")
        assert isinstance(first, Final)

        threads = await client.list_threads()
        assert [t.thread_id for t in threads] == ["lt-b", "lt-a"]  # most recently updated first
        b, a = threads
        assert (b.latest_run_id, b.latest_run_status) == (other.run_id, "COMPLETED")
        assert (a.latest_run_id, a.latest_run_status) == (again.run_id, "COMPLETED")
        assert a.preview == "3 it is"  # the start of its last message
        assert a.message_count == len((await client.get_thread("lt-a")).messages)
        assert [t.thread_id for t in await client.list_threads(limit=1)] == ["lt-b"]
        assert await client.list_threads(user_id="bo") == []

        runs = await client.list_runs("lt-a")
        assert [r.run_id for r in runs] == [again.run_id, first.run_id]
        assert all(r.status == "COMPLETED" for r in runs)

        checkpoints = await client.checkpoints("lt-a", run_id=first.run_id)
        as_of = await client.get_thread("lt-a", checkpoint_id=checkpoints[-1].checkpoint_id)
        forked = await client.fork("lt-a", checkpoints[-1].checkpoint_id, "lt-a-2")
        assert forked == "lt-a-2"
        copy = await client.get_thread(forked)
        assert copy.messages == as_of.messages
        assert await client.list_runs(forked) == []
        chosen = await client.fork("lt-a", checkpoints[0].checkpoint_id)
        assert chosen not in {"", "lt-a", "lt-a-2"}

        await client.invoke("add on the copy", thread_id=forked)
        assert len(await client.list_runs("lt-a")) == 2  # the original is untouched

        with pytest.raises(ClientError) as taken:
            await client.fork("lt-a", checkpoints[0].checkpoint_id, "lt-a-2")
        assert taken.value.code == "ALREADY_EXISTS"
        with pytest.raises(ClientError) as unknown:
            await client.fork("lt-a", "no-such-run:0")
        assert unknown.value.code == "NOT_FOUND"
        with pytest.raises(ClientError) as foreign:
            await client.list_runs("lt-a", user_id="bo")
        assert foreign.value.code == "NOT_FOUND"

        def plain_code() -> list[str]:
            with Client(stack.address, user_id="ana") as sync:
                return [t.thread_id for t in sync.list_threads()]

        assert (await asyncio.to_thread(plain_code))[0] == "lt-a-2"


async def test_a_run_whose_connection_drops_before_its_first_event_is_retried_as_one_run() -> None:
    registry, _ = make_registry()
    async with running_stack(SCRIPT, registry=registry) as stack, stack.client(user_id="ana") as reader:
        proxy = FirstReplyDroppingProxy(stack.gateway.port)
        port = await proxy.start()
        client = AgentClient(f"127.0.0.1:{port}", token="", user_id="ana", reattach_backoff_s=0.05)
        try:
            events = [e async for e in client.run("add 1 and 2", thread_id="retry-run", request_id="req-1")]
        finally:
            await client.close()
            await proxy.close()
        runs = await reader.list_runs("retry-run")
    assert proxy.dropped == 1  # the first attempt really was cut before any event
    assert proxy.connections >= 2
    assert len(runs) == 1  # the retry attached to the run the first attempt started
    assert runs[0].request_id == "req-1"
    assert events[0].sequence == 1  # the attached stream starts from the run's first event
    final = events[-1]
    assert isinstance(final, Final)
    assert final.reply == "3 it is"
    assert final.run_id == runs[0].run_id


async def test_an_invoke_whose_connection_drops_before_its_answer_is_retried_as_one_run() -> None:
    registry, _ = make_registry()
    async with running_stack(SCRIPT, registry=registry) as stack, stack.client(user_id="ana") as reader:
        proxy = FirstReplyDroppingProxy(stack.gateway.port)
        port = await proxy.start()
        client = AgentClient(f"127.0.0.1:{port}", token="", user_id="ana", reattach_backoff_s=0.05)
        try:
            result = await client.invoke("add 1 and 2", thread_id="retry-invoke")
        finally:
            await client.close()
            await proxy.close()
        runs = await reader.list_runs("retry-invoke")
    assert proxy.dropped == 1
    assert [r.run_id for r in runs] == [result.run_id]  # one run, though the call went twice
    assert runs[0].request_id  # the client chose an id by itself
    assert result.final.reply == "3 it is"
