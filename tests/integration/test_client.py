"""agentloop.client against the real services: the three-tool app, every call, reattach."""

from __future__ import annotations

import asyncio
import importlib.util
import io
from collections.abc import Callable
from contextlib import redirect_stdout
from pathlib import Path
from types import ModuleType

import pytest

from agentloop.client import (
    AgentClient,
    Client,
    ClientError,
    Decision,
    Final,
    Interrupt,
    NodeStarted,
    Token,
    ToolFinished,
    ToolStarted,
    approve,
    edit,
    reject,
)
from agentloop.kernel.security import Authenticator
from agentloop.kernel.settings import TlsSettings
from agentloop.scripted_model import Scenario, Script, ScriptedToolCall, Turn
from agentloop.testing import running_stack
from tests.support.certs import make_certs
from tests.support.net import pipe
from tests.support.scripts import add_scenario
from tests.support.tools import make_registry
from tool_svc import ToolContext, tool

pytestmark = pytest.mark.integration

APP_DIR = Path(__file__).resolve().parents[2] / "examples" / "three_tools"
APP_SCRIPT = Script(
    scenarios=(
        Scenario(
            match="weather",
            turns=(
                Turn(
                    tool_calls=(
                        ScriptedToolCall("get_weather", {"city": "Oslo"}),
                        ScriptedToolCall("find_restaurants", {"city": "Oslo", "party": 2}),
                    )
                ),
                Turn(content="Oslo: {{tool:get_weather}}. Try {{tool:find_restaurants}}."),
            ),
        ),
        Scenario(
            match="book",
            turns=(
                Turn(tool_calls=(ScriptedToolCall("book_table", {"restaurant": "Maaemo", "time": "19:30"}),)),
                Turn(content="Done: {{tool:book_table}}"),
            ),
        ),
    )
)


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def code_lines(path: Path) -> int:
    """Lines of code: not blank, not a comment, not the module docstring (its first line)."""
    lines = path.read_text().splitlines()
    assert lines[0].startswith('"""'), "the app starts with its docstring"
    assert lines[0].endswith('"""'), "a one-line docstring"
    return sum(1 for line in lines[1:] if line.strip() and not line.lstrip().startswith("#"))


def tool_functions() -> list[Callable[..., object]]:
    tools = load(APP_DIR / "tools.py")
    return [tools.get_weather, tools.find_restaurants, tools.book_table]


async def test_the_three_tool_app_is_at_most_25_lines_and_runs_against_the_services() -> None:
    assert code_lines(APP_DIR / "app.py") <= 25
    app = load(APP_DIR / "app.py")
    asked: list[str] = []

    def answer(prompt: str) -> str:
        asked.append(prompt)
        return "y" if len(asked) == 1 else "n"

    async with running_stack(APP_SCRIPT, tools=tool_functions()) as stack:

        def conversation() -> tuple[str, str, str, str]:
            with Client(stack.address) as client:
                first = app.turn(client, "trip", "What's the weather in Oslo, and where can we eat?")
                booked = app.turn(client, "trip", "Please book Maaemo at 19:30.", ask=answer)
                declined = app.turn(client, "trip-2", "Please book it again.", ask=answer)
                history = client.get_thread("trip")
                return first, booked, declined, "\n".join(m.content for m in history.messages)

        out = io.StringIO()
        with redirect_stdout(out):
            first, booked, declined, history = await asyncio.to_thread(conversation)

    assert first == 'Oslo: light snow, -2 °C. Try ["Maaemo", "Kontrast"].'
    assert "[get_weather] light snow" in out.getvalue()  # tool results printed as they finished
    assert booked == "Done: booked Maaemo at 19:30 for 2"
    assert asked[0].startswith('book_table({"restaurant": "Maaemo"')
    assert "declined" in declined  # the model read the rejection as the call's result
    assert "What's the weather in Oslo" in history
    assert "Done: booked Maaemo" in history


async def test_events_are_typed_and_every_read_call_works() -> None:
    registry, _ = make_registry()
    script = Script(scenarios=(add_scenario(1, 2, "3 it is"),))
    async with running_stack(script, registry=registry) as stack, stack.client(user_id="ana") as client:
        events = [e async for e in client.run("add 1 and 2", thread_id="t-typed", stream="all")]
        kinds = {type(e) for e in events}
        assert {NodeStarted, ToolStarted, ToolFinished, Token, Final} <= kinds
        sequences = [e.sequence for e in events]
        assert sequences == sorted(set(sequences))  # increasing, no repeats
        started = next(e for e in events if isinstance(e, ToolStarted))
        assert started.arguments == {"a": 1, "b": 2}
        final = events[-1]
        assert isinstance(final, Final)
        assert final.reply == "3 it is"
        assert final.tools_used == ("add",)

        result = await client.invoke("add them again", thread_id="t-typed")
        assert result.thread_id == "t-typed"
        assert result.tool_results[0].content == "3"

        replay = [e async for e in client.watch(final.run_id, after_sequence=events[1].sequence)]
        assert replay[-1] == final
        not_tokens = [e for e in events[2:] if not isinstance(e, Token)]
        assert [e for e in replay if not isinstance(e, Token)] == not_tokens  # stored tokens may come joined
        replayed_text = "".join(e.text for e in replay if isinstance(e, Token))
        assert replayed_text == "".join(e.text for e in events if isinstance(e, Token))

        thread = await client.get_thread("t-typed")
        assert thread.run is not None
        assert thread.run.status == "COMPLETED"
        assert [m.role for m in thread.messages][:2] == ["user", "assistant"]
        checkpoints = await client.checkpoints("t-typed")
        runs = await client.list_runs("t-typed")
        assert [r.run_id for r in runs] == [result.run_id, final.run_id]  # newest first
        assert {c.run_id for c in checkpoints} == {final.run_id, result.run_id}
        assert all(r.status == "COMPLETED" and r.request_id for r in runs)
        older = await client.get_thread("t-typed", checkpoint_id=checkpoints[0].checkpoint_id)
        assert len(older.messages) < len(thread.messages)

        with pytest.raises(ClientError) as missing:
            await client.get_thread("no-such-thread")
        assert missing.value.code == "NOT_FOUND"


async def test_memories_decisions_and_deletion() -> None:
    async with running_stack() as stack, stack.client(user_id="bo") as client:
        events = [e async for e in client.run("remember that my desk is 4B")]
        assert any(isinstance(e, Decision) and e.kind == "memory_stored" for e in events)
        (memory,) = await client.memories()
        assert memory.text == "my desk is 4B"
        await client.delete_memory(memory.memory_id)
        assert await client.memories() == []
        with pytest.raises(ClientError) as gone:
            await client.delete_memory(memory.memory_id)
        assert gone.value.code == "NOT_FOUND"


async def test_approve_edit_reject_and_cancel_a_paused_run() -> None:
    registry, probe = make_registry()
    script = Script(scenarios=(add_scenario(1, 2, "Result: {{tool:add}}"),))
    async with running_stack(script, registry=registry) as stack, stack.client() as client:
        outcomes = []
        for decide in (approve, lambda c: edit(c, {"a": 40, "b": 2}), lambda c: reject(c, "not today")):
            events = [e async for e in client.run("add please", require_approval=["add"])]
            paused = next(e for e in events if isinstance(e, Interrupt))
            assert isinstance(paused, Interrupt)
            assert paused.pending[0].arguments == {"a": 1, "b": 2}
            assert await client.pending(paused.run_id) == paused
            resumed = [e async for e in client.resume(paused.run_id, [decide(paused.pending[0])])]
            final = resumed[-1]
            assert isinstance(final, Final)
            outcomes.append(final.reply)
        assert outcomes[:2] == ["Result: 3", "Result: 42"]
        assert "not today" in outcomes[2]
        assert probe.calls["add"] == 2

        events = [e async for e in client.run("add please", require_approval=["add"])]
        paused = next(e for e in events if isinstance(e, Interrupt))
        assert await client.cancel(paused.run_id) == "CANCELLED"
        tail = [e async for e in client.watch(paused.run_id, after_sequence=paused.sequence)]
        assert isinstance(tail[-1], Final)
        assert tail[-1].stop_reason == "cancelled"


class DroppingProxy:
    """A TCP proxy in front of the gateway whose open connections can be cut, as a network would."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.writers: list[asyncio.StreamWriter] = []
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        self.writers += [writer, up_writer]
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    def drop(self) -> None:
        for writer in self.writers:
            writer.transport.abort()
        self.writers.clear()

    async def close(self) -> None:
        self.drop()
        if self.server is not None:
            self.server.close()


async def test_a_dropped_stream_reattaches_from_the_last_event_without_gaps_or_repeats() -> None:
    registry, _ = make_registry()
    script = Script(
        scenarios=(
            Scenario(
                match="slow",
                turns=(
                    Turn(tool_calls=(ScriptedToolCall("sleep_for", {"seconds": 1.0}),)),
                    Turn(content="slept well"),
                ),
            ),
        )
    )
    async with running_stack(script, registry=registry) as stack:
        proxy = DroppingProxy(stack.gateway.port)
        port = await proxy.start()
        client = AgentClient(f"127.0.0.1:{port}", token="", reattach_backoff_s=0.05)
        try:
            seen = []
            async for event in client.run("slow please"):
                seen.append(event)
                if isinstance(event, ToolStarted):
                    proxy.drop()  # the connection breaks while the tool runs
        finally:
            await client.close()
            await proxy.close()
    sequences = [e.sequence for e in seen]
    assert sequences == sorted(set(sequences))  # nothing repeated across the reattach
    assert len([e for e in seen if isinstance(e, ToolStarted)]) == 1
    assert len([e for e in seen if isinstance(e, ToolFinished)]) == 1  # nothing lost either
    assert isinstance(seen[-1], Final)
    assert seen[-1].reply == "slept well"


async def test_the_sync_client_works_from_a_thread_without_a_loop() -> None:
    async with running_stack() as stack:

        def plain_code() -> tuple[list[object], str]:
            with Client(stack.address, user_id="cy") as client:
                events: list[object] = list(client.run("hello there", thread_id="sync-1"))
                thread = client.get_thread("sync-1")
                return events, thread.run.status if thread.run else ""

        events, status = await asyncio.to_thread(plain_code)
    final = events[-1]
    assert isinstance(final, Final)
    assert "hello there" in final.reply
    assert status == "COMPLETED"


async def test_a_tools_idempotency_key_is_scoped_to_its_run() -> None:
    keys: list[tuple[str, str]] = []

    @tool
    def create_ticket(title: str, ctx: ToolContext) -> str:
        """Open a ticket (records the key it would use).

        Args:
            title: what the ticket is about.
        """
        keys.append((ctx.idempotency_key, ctx.tool_call_id))
        return "opened"

    call = ScriptedToolCall("create_ticket", {"title": "printer"}, id="call_0")  # an id endpoints reuse
    script = Script(
        scenarios=(Scenario(match="ticket", turns=(Turn(tool_calls=(call,)), Turn(content="ok"))),)
    )
    async with running_stack(script, tools=[create_ticket]) as stack, stack.client() as client:
        first = await client.invoke("ticket please")
        second = await client.invoke("ticket please")
    assert [call_id for _, call_id in keys] == ["call_0", "call_0"]  # the model's id repeats across runs
    (first_key, _), (second_key, _) = keys
    assert first_key != second_key  # the key tells the runs apart
    assert first_key.startswith(first.run_id)
    assert first_key.endswith(":call_0")
    assert second_key.startswith(second.run_id)


async def test_the_client_sends_its_token_and_speaks_mutual_tls(tmp_path: Path) -> None:
    certs = make_certs(tmp_path)
    tls = TlsSettings(
        cert_file=str(certs.server_cert),
        key_file=str(certs.server_key),
        client_ca_file=str(certs.ca),
        ca_file=str(certs.ca),
        client_cert_file=str(certs.client_cert),
        client_key_file=str(certs.client_key),
    )
    client_tls = TlsSettings(
        ca_file=str(certs.ca), client_cert_file=str(certs.client_cert), client_key_file=str(certs.client_key)
    )
    auth = Authenticator(tokens={"t-ana": "ana"})
    async with running_stack(authenticator=auth, tls=tls) as stack:
        async with AgentClient(stack.address, token="t-ana", tls=client_tls) as client:
            result = await client.invoke("hello over TLS", thread_id="tls-1")
            assert "hello over TLS" in result.reply
            assert (await client.get_thread("tls-1")).user_id == "ana"  # the token decided the user
        async with AgentClient(stack.address, token="wrong", tls=client_tls) as client:
            with pytest.raises(ClientError) as refused:
                await client.get_thread("tls-1")
            assert refused.value.code == "UNAUTHENTICATED"
        async with AgentClient(stack.address, token="t-ana", tls=TlsSettings()) as client:  # plaintext
            with pytest.raises(ClientError) as plaintext:
                await client.get_thread("tls-1", user_id="ana")
            assert plaintext.value.code == "UNAVAILABLE"
