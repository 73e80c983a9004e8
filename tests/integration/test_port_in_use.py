"""A service started on a port another server holds exits with one clear line, instead of sharing it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentloop.cli.demo import Child

pytestmark = pytest.mark.integration

CLI = [sys.executable, "-m", "agentloop.cli", "serve"]


def service_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOOP_REUSE_PORT"}
    env.update(DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'agentloop.db'}", **extra)
    return env


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[Child]:
    """A real ToolService process holding a port, started the way operators start it."""
    child = Child(
        "tools", [*CLI, "tools", "--port", "0"], service_env(tmp_path), str(tmp_path / "holder.log")
    )
    try:
        yield child
    finally:
        child.stop()


@pytest.mark.parametrize("service", ["gateway", "reasoner", "tools"])
def test_a_second_server_on_a_taken_port_exits_with_one_line(
    service: str, holder: Child, tmp_path: Path
) -> None:
    try:
        proc = subprocess.run(
            [*CLI, service, "--port", str(holder.port)],
            env=service_env(tmp_path, AGENTLOOP_LOG_LEVEL="WARNING"),
            capture_output=True,
            text=True,
            timeout=30,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{service} kept running on a taken port; it said: {exc.stdout!r}")
    assert proc.returncode != 0
    assert "listening" not in proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert f"port {holder.port} is already in use" in lines[-1]
    assert "Traceback" not in proc.stderr
    assert holder.proc.poll() is None  # the first server is untouched


def test_sharing_a_port_is_possible_when_asked_for(tmp_path: Path) -> None:
    env = service_env(tmp_path, AGENTLOOP_REUSE_PORT="1")
    first = Child("tools", [*CLI, "tools", "--port", "0"], env, str(tmp_path / "first.log"))
    try:
        second = Child("tools", [*CLI, "tools", "--port", str(first.port)], env, str(tmp_path / "second.log"))
        try:
            assert second.port == first.port
        finally:
            second.stop()
    finally:
        first.stop()
