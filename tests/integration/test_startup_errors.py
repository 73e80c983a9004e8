"""Startup failures as an operator meets them: one clear line and a non-zero exit, from real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentloop.cli.demo import ServiceExited, services
from tests.support.net import free_port

pytestmark = pytest.mark.integration

FORMS = "postgresql://user:password@host:5432/dbname or sqlite:///path/to/file.db"


def _agentloop(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENTLOOP_", "DATABASE_"))}
    clean["AGENTLOOP_HOME"] = str(cwd / "home")
    return subprocess.run(
        [sys.executable, "-m", "agentloop.cli", *args],
        env=clean | env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _error_lines(stderr: str) -> list[str]:
    """stderr without the services' own timestamped log lines."""
    return [line for line in stderr.splitlines() if line.strip() and not line[:4].isdigit()]


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("agentloop.db", "DATABASE_URL has no scheme"),
        ("mysql://u@db/agent", "DATABASE_URL: unsupported database 'mysql'"),
        ("postgresql://u:secret@db:notaport/agent", "DATABASE_URL is not a valid database URL"),
    ],
)
def test_a_bad_database_url_is_one_line_naming_the_accepted_forms(
    tmp_path: Path, url: str, problem: str
) -> None:
    proc = _agentloop(["serve", "gateway", "--port", "0"], tmp_path, DATABASE_URL=url)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert _error_lines(proc.stderr) == [
        f"configuration error: {problem}; use {FORMS} (unset: the embedded SQLite file)"
    ]
    assert "secret" not in proc.stderr
    # A value without a scheme never becomes a database file in the working directory.
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "home") == []


@pytest.mark.parametrize("command", [["serve", "gateway", "--port", "0"], ["db", "current"]])
def test_an_unreachable_database_is_retried_then_one_line(tmp_path: Path, command: list[str]) -> None:
    url = f"postgresql://agent:secret@127.0.0.1:{free_port()}/agent"
    proc = _agentloop(command, tmp_path, DATABASE_URL=url, AGENTLOOP_DB_CONNECT_S="1")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    lines = _error_lines(proc.stderr)
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: cannot open the database postgresql+asyncpg://agent:***@127.0.0.1:")
    assert "(tried for 1 s): ConnectionRefusedError" in lines[0]
    assert "secret" not in proc.stderr


def test_the_demo_says_why_a_service_exited(tmp_path: Path) -> None:
    proc = _agentloop(["demo"], tmp_path, DATABASE_URL="mysql://u@db/agent")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "error: gateway exited before it was ready (exit status 2); last lines of its log" in proc.stderr
    assert "configuration error: DATABASE_URL: unsupported database 'mysql'" in proc.stderr


def test_the_demo_reports_a_service_that_died_while_it_ran(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENTLOOP_", "DATABASE_"))}
    env["AGENTLOOP_HOME"] = str(tmp_path)
    with pytest.raises(ServiceExited) as info:
        _kill_tools_while_the_demo_runs(env)
    message = str(info.value)
    assert message.startswith(f"tools exited (exit status {-signal.SIGKILL}); last lines of its log")
    assert "listening on" in message  # its own log lines, not ours


def _kill_tools_while_the_demo_runs(env: dict[str, str]) -> None:
    with services(env) as ports:
        os.kill(ports["tools_pid"], signal.SIGKILL)
        deadline = time.monotonic() + 30
        while _alive(ports["tools_pid"]):
            assert time.monotonic() < deadline, "the killed service never exited"
            time.sleep(0.05)


def _alive(pid: int) -> bool:
    """Whether the child has not yet exited, asked without reaping it (the demo still must)."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
