"""The two shared processes of the peer benchmark: a throwaway Postgres cluster and the fake model.

Both systems talk to the same ones, so neither gets a faster database or a
cheaper model. The cluster is private (its own data folder and a free port)
so its CPU time can be read from /proc and its WAL counts only this benchmark;
it is stopped by its postmaster's pid, never by name.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentloop.cli.demo import stop_process

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_START_TIMEOUT_S = 60.0


def free_port() -> int:
    """A port nothing listens on right now (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _stat_fields(pid: int) -> list[str]:
    text = Path(f"/proc/{pid}/stat").read_text()
    return text.rsplit(")", 1)[1].split()


def tree_cpu_seconds(root_pid: int) -> float:
    """CPU of a server and its children, the exited ones included.

    A backend that closes during the measurement takes its CPU time with it
    unless the parent's cutime/cstime (children it has waited for) is added.
    The postmaster waits for every backend, so this total misses nothing
    whether a pool keeps its connections or closes them as they come back.
    """
    fields = _stat_fields(root_pid)
    ticks = sum(int(fields[i]) for i in (11, 12, 13, 14))
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == root_pid:
            continue
        try:
            child = _stat_fields(int(entry))
        except (OSError, IndexError):
            continue
        if int(child[1]) == root_pid:
            ticks += int(child[11]) + int(child[12])
    return ticks / _CLOCK_TICKS


class PostgresCluster:
    """initdb + pg_ctl in a temporary folder, as the `postgres` user when run as root."""

    def __init__(self, pg_bin: str | None = None, os_user: str = "postgres", port: int | None = None) -> None:
        self.pg_bin = pg_bin
        self.os_user = os_user
        self.port = port or free_port()
        self.work = Path(tempfile.mkdtemp(prefix="peerbench-pg."))
        self.pid = 0

    @property
    def dsn(self) -> str:
        """libpq URL of the cluster's `postgres` database."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _cmd(self, name: str, *args: str) -> list[str]:
        exe = str(Path(self.pg_bin) / name) if self.pg_bin else shutil.which(name)
        if not exe:
            raise RuntimeError(f"{name} not found on PATH; set PG_BIN to the folder holding it")
        argv = [exe, *args]
        return ["runuser", "-u", self.os_user, "--", *argv] if os.geteuid() == 0 else argv

    def start(self) -> None:
        if os.geteuid() == 0:
            shutil.chown(self.work, user=self.os_user)
        data = self.work / "data"
        initdb = self._cmd(
            "initdb", "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"
        )
        subprocess.run(initdb, check=True, capture_output=True, text=True)
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.work}"
        log = str(self.work / "pg.log")
        subprocess.run(
            self._cmd("pg_ctl", "-D", str(data), "-l", log, "-w", "-o", options, "start"),
            check=True,
            capture_output=True,
            text=True,
        )
        self.pid = int((data / "postmaster.pid").read_text().splitlines()[0])

    def cpu_seconds(self) -> float:
        return tree_cpu_seconds(self.pid)

    def stop(self) -> None:
        """Fast shutdown of our own postmaster (SIGINT by pid), then remove the folder."""
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGINT)
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline and Path(f"/proc/{self.pid}").exists():
                    time.sleep(0.1)
            except ProcessLookupError:
                pass
            self.pid = 0
        shutil.rmtree(self.work, ignore_errors=True)


@dataclass(eq=False)
class FakeModel:
    """The peer harness's fake OpenAI-compatible server (fake_llm.py), run with the harness's Python."""

    python: str
    peer_dir: Path
    latency_ms: float
    tokens_per_s: float
    tokens: int
    proc: subprocess.Popen[bytes] | None = field(default=None, init=False)
    root: str = field(default="", init=False)

    @property
    def base_url(self) -> str:
        return self.root + "/v1"

    def start(self) -> None:
        port_file = Path(tempfile.mkdtemp(prefix="peerbench-llm.")) / "port"
        argv = [
            self.python,
            str(self.peer_dir / "fake_llm.py"),
            *("--host", "127.0.0.1", "--port", "0", "--port-file", str(port_file)),
            *("--latency-ms", str(self.latency_ms), "--tokens-per-s", str(self.tokens_per_s)),
            *("--final-tokens", str(self.tokens)),
        ]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not port_file.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"fake model did not start (exit code {self.proc.poll()})")
            time.sleep(0.05)
        self.root = f"http://127.0.0.1:{port_file.read_text().strip()}"
        shutil.rmtree(port_file.parent, ignore_errors=True)

    def _call(self, path: str, method: str = "GET") -> dict[str, Any]:
        request = urllib.request.Request(
            self.root + path, method=method, data=b"" if method == "POST" else None
        )
        with urllib.request.urlopen(request, timeout=30) as reply:
            data: dict[str, Any] = json.loads(reply.read())
            return data

    def config(self) -> dict[str, Any]:
        return self._call("/config")

    def stats(self) -> dict[str, Any]:
        """Requests served, inconsistent conversations seen and its own CPU since the last reset."""
        return self._call("/stats")

    def reset_stats(self) -> None:
        self._call("/stats/reset", "POST")

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
        self.proc = None
