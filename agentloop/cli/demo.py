"""`agentloop demo`: the scripted model and the three services as separate processes, then one question.

Each child binds port 0 and prints the port it got, so the demo never collides
with something already listening; the children are stopped with SIGTERM (their
graceful path) when the question has been answered. Each child's log (stderr)
goes to a file, so a child that exits early can say why: its exit status and
its last log lines are reported (`ServiceExited`) instead of a bare failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from agentloop.kernel.setting_errors import StartupError

_PORT_LINE = re.compile(r"listening on (?:port |http://[^:]+:)(\d+)")
_START_TIMEOUT_S = 60.0
LOG_TAIL_LINES = 20


class ServiceExited(StartupError):
    """A child service stopped on its own: its exit status and the last lines of its log."""


class Child:
    """A service process whose first stdout line announces its port."""

    def __init__(
        self, name: str, argv: list[str], env: Mapping[str, str], stderr_path: str | None = None
    ) -> None:
        self.name = name
        self.owns_log = stderr_path is None
        if stderr_path is None:
            fd, stderr_path = tempfile.mkstemp(prefix=f"agentloop-{name}-", suffix=".log")
            os.close(fd)
        self.stderr_path = stderr_path
        with open(stderr_path, "w") as stderr:
            self.proc = subprocess.Popen(
                argv, env=dict(env), stdout=subprocess.PIPE, stderr=stderr, text=True
            )
        self.port = self._wait_for_port()

    def _wait_for_port(self) -> int:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:  # stdout closed: the child is exiting
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=5)
                break
            match = _PORT_LINE.search(line)
            if match:
                return int(match.group(1))
        if self.proc.poll() is not None:
            raise self.exited("exited before it was ready")
        self.stop()
        raise self.exited(f"did not start within {_START_TIMEOUT_S:g} s")

    def discard_log(self) -> None:
        """Remove the log file this child was given by default (a caller's own path is kept)."""
        if self.owns_log:
            with contextlib.suppress(OSError):
                os.unlink(self.stderr_path)

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> list[str]:
        """The last `lines` lines the child wrote to its log."""
        with open(self.stderr_path, errors="replace") as log:
            return [line.rstrip("\n") for line in deque(log, maxlen=lines)]

    def exited(self, what: str | None = None) -> ServiceExited:
        """ServiceExited for this child: `what` happened (default: it exited), its status, its log's tail."""
        code = self.proc.poll()
        status = "still running" if code is None else f"exit status {code}"
        tail = "\n".join(f"  {line}" for line in self.log_tail()) or "  (its log is empty)"
        return ServiceExited(
            f"{self.name} {what or 'exited'} ({status}); last lines of its log ({self.stderr_path}):\n{tail}"
        )

    def stop(self) -> None:
        stop_process(self.proc)


def stop_process(proc: subprocess.Popen[Any], grace_s: float = 15) -> None:
    """SIGTERM, then SIGKILL if it does not exit within `grace_s`: a stuck child cannot hang shutdown."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def services(env: Mapping[str, str], model_args: Sequence[str] = ()) -> Iterator[dict[str, int]]:
    """Start (scripted model,) reasoner, tools and gateway; yields their ports by name.

    Also used by the benchmarks, which read each child's pid from `children`.
    """
    cli = [sys.executable, "-m", "agentloop.cli"]
    children: list[Child] = []
    env = dict(env)
    clean = False
    try:
        if not env.get("OPENAI_BASE_URL"):
            model_cmd = [sys.executable, "-m", "agentloop.scripted_model", "--port", "0", *model_args]
            model = Child("model", model_cmd, env)
            children.append(model)
            env["OPENAI_BASE_URL"] = f"http://127.0.0.1:{model.port}/v1"
        reasoner = Child("reasoner", [*cli, "serve", "reasoner", "--port", "0"], env)
        children.append(reasoner)
        tools = Child("tools", [*cli, "serve", "tools", "--port", "0"], env)
        children.append(tools)
        gateway = Child(
            "gateway",
            [
                *cli,
                "serve",
                "gateway",
                "--port",
                "0",
                "--reasoner",
                f"127.0.0.1:{reasoner.port}",
                "--tools-addr",
                f"127.0.0.1:{tools.port}",
            ],
            env,
        )
        children.append(gateway)
        yield {c.name: c.port for c in children} | {f"{c.name}_pid": c.proc.pid for c in children}
        for child in children:
            if child.proc.poll() is not None:
                raise child.exited()
        clean = True
    finally:
        for child in reversed(children):
            child.stop()
            if clean:
                child.discard_log()


def run_demo(question: str | None, stream_mode: str, env: Mapping[str, str]) -> int:
    """Start everything, ask one question with tokens streaming, stop everything."""
    from agentloop.cli.commands.ask import ask
    from agentloop.scripted_model.demo import DEMO_QUESTION

    question = question or DEMO_QUESTION
    with services(env) as ports:
        up = ", ".join(f"{n} :{p}" for n, p in ports.items() if not n.endswith("_pid"))
        print(f"services up: {up}")
        print(f"> {question}\n", flush=True)
        return asyncio.run(
            ask(question, f"127.0.0.1:{ports['gateway']}", stream_mode=stream_mode, timeout_s=120)
        )
