"""A dependency that comes back is used at once; runs made while it was away wait for it.

The Reasoner (or the ToolService) runs as a child process on a fixed port. It
is started after the gateway, killed with SIGKILL for a few seconds and
restarted on the same port:
runs started while it is down finish once it is back (within their deadline),
and runs after that succeed without a reconnect backoff still running down.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from google.rpc import code_pb2

from agentloop.scripted_model import Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2
from tests.fixtures.slow_tools import LOG_ENV
from tests.support.processes import ServiceProcess, free_port
from tests.support.scripts import ADD_SCENARIO
from tests.support.stack import Stack, final_of, kinds, start_stack
from tests.support.tools import make_registry

pytestmark = pytest.mark.integration

SCRIPT = Script(scenarios=(ADD_SCENARIO,))
ECHO = Script(
    scenarios=(
        Scenario(
            match="echo",
            turns=(
                Turn(tool_calls=(ScriptedToolCall("quick_echo", {"text": "hi"}),)),
                Turn(content="Got {{tool:quick_echo}}."),
            ),
        ),
    )
)
OUTAGE_S = 4.0
RUN_DEADLINE_S = 60.0


async def answer(stack: Stack, deadline_s: float = RUN_DEADLINE_S) -> str:
    """The final reply of one run; fails (with the event kinds) when the run ended otherwise."""
    events = await stack.run("add please", deadline_s=deadline_s)
    assert events[-1].WhichOneof("event") == "final", (kinds(events), events[-1])
    return final_of(events).final_reply


async def test_a_gateway_started_before_its_reasoner_serves_its_first_run() -> None:
    port = free_port()
    # The default retry settings: nothing here is tuned to make the wait work.
    defaults = {"rpc_backoff_s": 0.2}
    stack = await start_stack(
        SCRIPT, make_registry()[0], reasoner_addr=f"127.0.0.1:{port}", gateway_overrides=defaults
    )
    reasoner = ServiceProcess("reasoner", ["--base-url", stack.model.base_url], port=port)
    try:
        first = asyncio.create_task(answer(stack))
        await asyncio.sleep(0.5)  # the run is in flight, waiting for a reasoner that is not there yet
        assert not first.done()
        await reasoner.start()
        assert await first == "It is 5."
    finally:
        await stack.close()
        await reasoner.stop()


async def test_runs_during_a_reasoner_outage_finish_once_it_is_back_and_later_runs_at_once() -> None:
    reasoner = ServiceProcess("reasoner")
    stack = await start_stack(
        SCRIPT,
        make_registry()[0],
        reasoner_addr=reasoner.addr,
        gateway_overrides={"rpc_backoff_s": 0.2},
    )
    reasoner.argv += ["--base-url", stack.model.base_url]
    try:
        await reasoner.start()
        assert await answer(stack) == "It is 5."

        await reasoner.kill()
        during = [asyncio.create_task(answer(stack)) for _ in range(3)]
        await asyncio.sleep(OUTAGE_S)  # the outage: every run is waiting, none has failed
        assert not any(task.done() for task in during), [t.result() for t in during if t.done()]
        await reasoner.start()
        assert await asyncio.gather(*during) == ["It is 5."] * 3

        # Back: every run succeeds, the first one included, each well within a short deadline.
        for _ in range(5):
            assert await answer(stack, deadline_s=15) == "It is 5."
    finally:
        await stack.close()
        await reasoner.stop()


async def test_a_run_waiting_for_a_dependency_that_stays_away_fails_clearly() -> None:
    port = free_port()
    stack = await start_stack(
        SCRIPT,
        make_registry()[0],
        reasoner_addr=f"127.0.0.1:{port}",
        gateway_overrides={"rpc_wait_s": 1.5},
    )
    try:
        events = await stack.run("add please", stream_mode=agent_pb2.STREAM_MODE_FINAL_ONLY)
    finally:
        await stack.close()
    last = events[-1]
    assert last.WhichOneof("event") == "error", kinds(events)
    assert last.error.code == code_pb2.UNAVAILABLE
    assert last.error.message == f"reasoner: no replica reachable at 127.0.0.1:{port} (waited 1.5 s)"


async def test_runs_during_a_tool_service_outage_finish_once_it_is_back(tmp_path: Path) -> None:
    env = {LOG_ENV: str(tmp_path / "tools.log")}
    tools = ServiceProcess("tools", ["--tools", "tests.fixtures.slow_tools"], env=env)
    await tools.start()
    stack = await start_stack(ECHO, gateway_overrides={"tools_addr": tools.addr, "rpc_backoff_s": 0.2})

    async def echo() -> str:
        events = await stack.run("echo please", deadline_s=RUN_DEADLINE_S)
        assert events[-1].WhichOneof("event") == "final", (kinds(events), events[-1])
        return final_of(events).final_reply

    try:
        assert await echo() == "Got quick hi."
        await tools.kill()
        during = [asyncio.create_task(echo()) for _ in range(3)]
        await asyncio.sleep(OUTAGE_S)
        assert not any(task.done() for task in during), [t.result() for t in during if t.done()]
        await tools.start()
        assert await asyncio.gather(*during) == ["Got quick hi."] * 3
        for _ in range(3):
            assert await echo() == "Got quick hi."
    finally:
        await stack.close()
        await tools.stop()
