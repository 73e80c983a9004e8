"""Every client command of `agentloop` as a user runs it, against the real services.

The stack runs in the test's process; each command is a separate `agentloop` process. The
approval prompt is answered through a pseudo-terminal, and Ctrl-C is a real SIGINT.
"""

from __future__ import annotations

import asyncio
import json
import os
import pty
import re
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentloop.client import AgentClient, Interrupt
from agentloop.scripted_model import Scenario, Script, ScriptedToolCall, Turn
from agentloop.testing import Stack, running_stack
from tests.support.scripts import add_scenario
from tests.support.tools import make_registry

pytestmark = pytest.mark.integration

SCHEMA = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
SCRIPT = Script(
    scenarios=(
        add_scenario(1, 2, "Result: {{tool:add}}"),
        Scenario(
            match="slow",
            turns=(Turn(tool_calls=(ScriptedToolCall("sleep_for", {"seconds": 30}),)), Turn(content="woke")),
        ),
        Scenario(
            match="structured",
            turns=(Turn(tool_calls=(ScriptedToolCall("final_answer", {"answer": 42}),)),),
        ),
    )
)
ENV = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_"))} | {
    "PYTHONUNBUFFERED": "1",
    "GRPC_VERBOSITY": "ERROR",
}


@pytest.fixture
async def stack() -> AsyncIterator[Stack]:
    registry, _ = make_registry()
    async with running_stack(SCRIPT, registry=registry) as running:
        yield running


def agentloop_argv(stack: Stack, *args: str) -> list[str]:
    """`agentloop ARGS` against the stack's gateway, with this interpreter."""
    return [sys.executable, "-m", "agentloop.cli", *args, "--gateway", stack.address]


async def cli(stack: Stack, *args: str, within_s: float = 60) -> tuple[int, str, str]:
    """Run `agentloop ARGS --gateway <stack>` without a terminal: exit status, stdout, stderr."""
    proc = await asyncio.create_subprocess_exec(
        *agentloop_argv(stack, *args),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=ENV,
    )
    out, err = await asyncio.wait_for(proc.communicate(), within_s)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


class Terminal:
    """An `agentloop` process on a pseudo-terminal: read what it shows, type answers, press Ctrl-C."""

    def __init__(self, proc: asyncio.subprocess.Process, master: int) -> None:
        self.proc = proc
        self.master = master
        self.shown = ""

    @classmethod
    async def start(cls, stack: Stack, *args: str) -> Terminal:
        master, slave = pty.openpty()
        proc = await asyncio.create_subprocess_exec(
            *agentloop_argv(stack, *args),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=ENV,
        )
        os.close(slave)
        return cls(proc, master)

    async def expect(self, pattern: str, within_s: float = 30) -> str:
        """Wait until the screen shows `pattern` (a regex); everything shown so far."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within_s
        while not re.search(pattern, self.shown):
            ready: asyncio.Future[None] = loop.create_future()
            loop.add_reader(self.master, _settle, ready)
            try:
                await asyncio.wait_for(ready, max(0.01, deadline - loop.time()))
            except TimeoutError:
                raise AssertionError(f"{pattern!r} never shown; screen:\n{self.shown}") from None
            finally:
                loop.remove_reader(self.master)
            try:
                self.shown += os.read(self.master, 65536).decode(errors="replace")
            except OSError:  # the process exited and closed the terminal
                if not re.search(pattern, self.shown):
                    raise AssertionError(f"{pattern!r} never shown; screen:\n{self.shown}") from None
        return self.shown

    def type(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\n")

    async def exit_status(self, within_s: float = 30) -> int:
        status = await asyncio.wait_for(self.proc.wait(), within_s)
        try:
            while chunk := os.read(self.master, 65536):
                self.shown += chunk.decode(errors="replace")
        except OSError:
            pass
        os.close(self.master)
        return status


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def paused_run(stack: Stack, thread_id: str) -> Interrupt:
    async with stack.client() as client:
        events = [e async for e in client.run("add please", thread_id=thread_id, require_approval=["add"])]
    paused = next(e for e in events if isinstance(e, Interrupt))
    return paused


async def test_ask_prints_ids_decisions_json_and_takes_system_model_and_schema(
    stack: Stack, tmp_path: Path
) -> None:
    code, out, _ = await cli(stack, "ask", "remember that my desk is 4B", "--user", "ana")
    assert code == 0
    assert "◆ memory_stored: " in out
    summary = json.loads(out.splitlines()[-1].removeprefix("— "))
    assert summary["thread_id"]
    assert summary["run_id"]

    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    code, out, _ = await cli(
        stack, "ask", "structured please", "--json", "--output-schema", str(schema), "--system", "Be terse.",
        "--model", "tiny-model", "--thread", "cli-json",
    )  # fmt: skip
    assert code == 0
    result = json.loads(out)
    assert result["thread_id"] == "cli-json"
    assert result["structured_output"] == {"answer": 42}
    sent = stack.model.requests[-1]
    assert sent["model"] == "tiny-model"
    assert sent["messages"][0]["role"] == "system"
    assert sent["messages"][0]["content"].startswith("Be terse.")

    code, _, err = await cli(stack, "ask", "x", "--output-schema", str(tmp_path / "missing.json"))
    assert code == 2
    assert "--output-schema" in err


async def test_thread_runs_checkpoints_watch_and_memories(stack: Stack) -> None:
    code, out, _ = await cli(stack, "ask", "add 1 and 2", "--thread", "cli-read", "--json")
    run_id = json.loads(out)["run_id"]

    code, out, _ = await cli(stack, "thread", "cli-read")
    assert code == 0
    assert "add 1 and 2" in out
    assert f"latest run {run_id}: COMPLETED" in out

    code, out, _ = await cli(stack, "runs", "cli-read")
    assert code == 0
    assert out.startswith(f"{run_id}  COMPLETED")

    code, out, _ = await cli(stack, "checkpoints", "cli-read", "--json")
    checkpoints = json.loads(out)
    assert checkpoints
    assert {c["run_id"] for c in checkpoints} == {run_id}

    code, out, _ = await cli(stack, "watch", run_id)
    assert code == 0
    assert "✓ add: 3" in out
    assert "Result: 3" in out

    code, out, err = await cli(stack, "thread", "no-such-thread")
    assert code == 2
    assert err.startswith("error [NOT_FOUND]")

    await cli(stack, "ask", "remember that tea beats coffee", "--user", "mo")
    code, out, _ = await cli(stack, "memories", "--user", "mo", "--json")
    (memory,) = json.loads(out)
    assert memory["text"] == "tea beats coffee"
    code, out, _ = await cli(stack, "memories", "delete", memory["memory_id"], "--user", "mo")
    assert code == 0
    code, out, _ = await cli(stack, "memories", "--user", "mo")
    assert "(no memories)" in out


async def test_threads_runs_and_fork_commands(stack: Stack) -> None:
    code, out, _ = await cli(stack, "ask", "add 1 and 2", "--thread", "cli-t1", "--user", "li", "--json")
    first = json.loads(out)["run_id"]
    code, out, _ = await cli(stack, "ask", "add 3 and 4", "--thread", "cli-t1", "--user", "li", "--json")
    second = json.loads(out)["run_id"]
    await cli(stack, "ask", "add again", "--thread", "cli-t2", "--user", "li")

    code, out, _ = await cli(stack, "threads", "--user", "li")
    assert code == 0
    header, *rows = out.splitlines()
    assert header.split() == ["THREAD", "UPDATED", "STATUS", "PREVIEW"]
    assert [row.split()[0] for row in rows] == ["cli-t2", "cli-t1"]  # most recently updated first
    assert rows[1].split()[3] == "COMPLETED"
    assert "Result: 3" in rows[1]  # the preview: its last message
    code, out, _ = await cli(stack, "threads", "--user", "li", "--json")
    listed = json.loads(out)
    assert [(t["thread_id"], t["latest_run_id"]) for t in listed][1] == ("cli-t1", second)
    code, out, _ = await cli(stack, "threads", "--user", "nobody")
    assert (code, out.strip()) == (0, "(no threads)")

    code, out, _ = await cli(stack, "runs", "cli-t1", "--user", "li")
    assert code == 0
    assert [line.split()[:2] for line in out.splitlines()] == [[second, "COMPLETED"], [first, "COMPLETED"]]

    code, out, _ = await cli(stack, "checkpoints", "cli-t1", "--run", first, "--user", "li", "--json")
    checkpoint = json.loads(out)[-1]["checkpoint_id"]
    code, out, _ = await cli(stack, "fork", "cli-t1", checkpoint, "--new-thread", "cli-t3", "--user", "li")
    assert (code, out.strip()) == (0, "cli-t3")
    code, out, _ = await cli(stack, "fork", "cli-t1", checkpoint, "--user", "li", "--json")
    assert code == 0
    assert json.loads(out)["thread_id"] not in {"", "cli-t1", "cli-t3"}
    code, out, _ = await cli(stack, "thread", "cli-t3", "--user", "li")
    assert "add 1 and 2" in out
    assert "add 3 and 4" not in out  # the copy ends at the checkpoint
    code, out, _ = await cli(stack, "runs", "cli-t3", "--user", "li")
    assert (code, out.strip()) == (0, "(no runs)")

    code, out, err = await cli(stack, "fork", "cli-t1", checkpoint, "--new-thread", "cli-t3", "--user", "li")
    assert (code, out) == (2, "")
    assert err.startswith("error [ALREADY_EXISTS]")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agentloop.cli", "--help", stdout=asyncio.subprocess.PIPE, env=ENV
    )
    helptext, _ = await proc.communicate()
    assert "copy a thread as of a checkpoint into a new thread" in " ".join(helptext.decode().split())


async def test_approve_reject_edit_and_cancel_commands(stack: Stack) -> None:
    paused = await paused_run(stack, "cli-approve")
    code, out, _ = await cli(stack, "approve", paused.run_id)
    assert code == 0
    assert "Result: 3" in out

    paused = await paused_run(stack, "cli-edit")
    code, out, _ = await cli(stack, "edit", paused.run_id, "--args", '{"a": 40, "b": 2}')
    assert code == 0
    assert "Result: 42" in out

    paused = await paused_run(stack, "cli-reject")
    code, out, _ = await cli(stack, "reject", paused.run_id, "--reason", "not today")
    assert code == 0
    assert "not today" in out

    code, _, err = await cli(stack, "approve", paused.run_id)
    assert code == 2
    assert "not paused" in err or "not waiting for approval" in err

    paused = await paused_run(stack, "cli-cancel")
    code, out, _ = await cli(stack, "cancel", paused.run_id)
    assert code == 0
    assert out.strip() == f"run {paused.run_id}: CANCELLED"


async def test_ask_without_a_terminal_says_how_to_decide_and_yes_approves(stack: Stack) -> None:
    code, out, err = await cli(stack, "ask", "add please", "--approve", "add")
    assert code == 3
    assert "⏸ paused" in out
    assert "agentloop approve " in err
    code, out, _ = await cli(stack, "ask", "add please", "--approve", "add", "--yes")
    assert code == 0
    assert "Result: 3" in out


async def test_the_approval_prompt_on_a_terminal(stack: Stack) -> None:
    term = await Terminal.start(stack, "ask", "add please", "--approve", "add")
    await term.expect(r"run add\(\{\"a\": 1, \"b\": 2\}\)\? \[y\]es / \[n\]o / \[e\]dit: ")
    term.type("e")
    await term.expect("arguments as JSON: ")
    term.type('{"a": 5, "b": 5}')
    assert await term.exit_status() == 0
    assert "Result: 10" in term.shown

    term = await Terminal.start(stack, "ask", "add please", "--approve", "add")
    await term.expect(r"\[e\]dit: ")
    term.type("n")
    await term.expect("reason \\(optional\\): ")
    term.type("too expensive")
    assert await term.exit_status() == 0
    assert "too expensive" in term.shown


async def test_ctrl_c_cancels_the_run_and_a_second_ctrl_c_detaches(stack: Stack) -> None:
    term = await Terminal.start(stack, "ask", "slow please", "--thread", "cli-sigint")
    await term.expect("→ sleep_for")
    term.proc.send_signal(signal.SIGINT)
    assert await term.exit_status() == 130
    assert "cancelling the run" in term.shown
    assert '"stop_reason": "cancelled"' in term.shown
    async with AgentClient(stack.address, token="") as client:
        thread = await client.get_thread("cli-sigint")
    assert thread.run is not None
    assert thread.run.status == "CANCELLED"

    term = await Terminal.start(stack, "ask", "slow please", "--thread", "cli-detach")
    await term.expect("→ sleep_for")
    term.proc.send_signal(signal.SIGINT)
    await term.expect("cancelling the run")
    term.proc.send_signal(signal.SIGINT)
    assert await term.exit_status() == 130
    run_id = re.search(r"agentloop watch (\w+)", term.shown)
    assert run_id is not None, term.shown
