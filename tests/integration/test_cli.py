"""The command line as users run it: the demo as separate processes, ask, health."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentloop.cli.commands.ask import ask
from agentloop.cli.main import health
from agentloop.scripted_model import demo_script
from tests.support.net import free_port
from tests.support.stack import start_stack

pytestmark = pytest.mark.integration


def test_demo_streams_an_answer_that_used_two_tools_in_one_step(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["AGENTLOOP_HOME"] = str(tmp_path)  # the user's own demo database stays out of the test
    proc = subprocess.run(
        [sys.executable, "-m", "agentloop.cli", "demo"], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("→ ")]
    ends = [i for i, line in enumerate(lines) if line.startswith("✓ ")]
    assert len(starts) == 2
    assert len(ends) == 2
    assert max(starts) < min(ends)  # both calls started before either finished: one parallel step
    assert "7006652" in proc.stdout
    summary = json.loads(lines[-1].removeprefix("— "))
    assert summary["steps_taken"] == 1
    assert sorted(summary["tools_used"]) == ["calculator", "current_time"]
    assert summary["stop_reason"] == "completed"
    assert summary["llm_calls"] == 2  # one per step, the streamed answer included: nothing generated twice


async def test_ask_renders_tools_and_the_streamed_answer(capsys: pytest.CaptureFixture[str]) -> None:
    stack = await start_stack(demo_script())
    try:
        code = await ask(
            "Which tables are in the database? Show me the first customers.",
            f"127.0.0.1:{stack.gateway.port}",
            stream_mode="all",
            show_nodes=True,
        )
    finally:
        await stack.close()
    out = capsys.readouterr().out
    assert code == 0
    assert "→ sql_list_tables(" in out
    assert "→ sql_query(" in out
    assert "Here are the first customers:" in out
    assert "[node_start agent step=0]" in out
    assert "thinking: " in out


async def test_health_reports_serving_and_unreachable() -> None:
    stack = await start_stack(demo_script())
    try:
        assert await health(f"127.0.0.1:{stack.gateway.port}", "", 3) == 0
        assert await health(f"127.0.0.1:{stack.tools.port}", "agentloop.v1.ToolService", 3) == 0
    finally:
        await stack.close()
    assert await health(f"127.0.0.1:{free_port()}", "", 1) == 1
