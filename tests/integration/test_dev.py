"""`agentloop dev`: the three services in one process, tool modules reloaded when their files change."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agentloop.client import Client
from agentloop.scripted_model import Scenario, Script, ScriptedToolCall, Turn

pytestmark = pytest.mark.integration

TOOLS = '''
from tool_svc import tool


@tool
def greet(name: str) -> str:
    """Greet someone.

    Args:
        name: who.
    """
    return "{word} " + name
'''
SCRIPT = Script(
    scenarios=(
        Scenario(
            match="greet",
            turns=(
                Turn(tool_calls=(ScriptedToolCall("greet", {"name": "Ana"}),)),
                Turn(content="{{tool:greet}}"),
            ),
        ),
    )
)


class Lines:
    """A process's output lines, read in the background so the test can wait for one with a timeout."""

    def __init__(self, stream: object) -> None:
        self.queue: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            self.queue.put(line)

    def wait_for(self, pattern: str, within_s: float = 60) -> re.Match[str]:
        while True:
            try:
                line = self.queue.get(timeout=within_s)
            except queue.Empty:
                raise AssertionError(f"{pattern!r} never printed; saw {self.seen}") from None
            self.seen.append(line)
            if match := re.search(pattern, line):
                return match


def test_dev_serves_a_tool_file_and_reloads_it_when_it_changes(tmp_path: Path) -> None:
    tools = tmp_path / "my_tools.py"
    tools.write_text(TOOLS.replace("{word}", "hello"))
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT.to_dict()))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "DATABASE_"))}
    env |= {"AGENTLOOP_HOME": str(tmp_path), "PYTHONUNBUFFERED": "1", "GRPC_VERBOSITY": "ERROR"}
    env.pop("PYTHONPATH", None)  # the tool file is found by its path, not through PYTHONPATH
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentloop.cli",
            "dev",
            "--tools",
            "./my_tools.py",
            "--port",
            "0",
            "--script",
            "script.json",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = Lines(proc.stdout), Lines(proc.stderr)
    try:
        port = out.wait_for(r"gateway listening on port (\d+)").group(1)
        with Client(f"127.0.0.1:{port}", token="") as client:
            assert client.invoke("greet Ana").reply == "hello Ana"

            tools.write_text(TOOLS.replace("{word}", "hi"))
            os.utime(tools, (tools.stat().st_atime, tools.stat().st_mtime + 5))
            out.wait_for(r"tools reloaded: .*greet")
            assert client.invoke("greet Ana again").reply == "hi Ana"

            tools.write_text("def broken(:\n")
            os.utime(tools, (tools.stat().st_atime, tools.stat().st_mtime + 10))
            err.wait_for(r"tools not reloaded: .*my_tools")
            assert client.invoke("greet Ana once more").reply == "hi Ana"  # the last good tools serve on
            assert list(tmp_path.glob("*.db"))  # threads went to the embedded SQLite file
    finally:
        proc.terminate()
        code = proc.wait(timeout=30)
    assert code == 0
