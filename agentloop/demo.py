"""`agentloop demo`: the scripted model and the three services as separate processes, then one question.

Each child binds port 0 and prints the port it got, so the demo never collides
with something already listening; the children are stopped with SIGTERM (their
graceful path) when the question has been answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence

_PORT_LINE = re.compile(r"listening on (?:port |http://[^:]+:)(\d+)")
_START_TIMEOUT_S = 60.0


class Child:
    """A service process whose first stdout line announces its port."""

    def __init__(
        self, name: str, argv: list[str], env: Mapping[str, str], stderr_path: str | None = None
    ) -> None:
        self.name = name
        self.stderr_path = stderr_path
        with contextlib.ExitStack() as files:
            stderr = files.enter_context(open(stderr_path, "w")) if stderr_path else subprocess.DEVNULL
            self.proc = subprocess.Popen(
                argv, env=dict(env), stdout=subprocess.PIPE, stderr=stderr, text=True
            )
        self.port = self._wait_for_port()

    def _wait_for_port(self) -> int:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            match = _PORT_LINE.search(line)
            if match:
                return int(match.group(1))
        self.stop()
        raise RuntimeError(f"{self.name} did not start (exit code {self.proc.poll()})")

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it does not exit in time."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@contextlib.contextmanager
def services(env: Mapping[str, str], model_args: Sequence[str] = ()) -> Iterator[dict[str, int]]:
    """Start (scripted model,) reasoner, tools and gateway; yields their ports by name.

    Also used by the benchmarks, which read each child's pid from `children`.
    """
    cli = [sys.executable, "-m", "agentloop.cli"]
    children: list[Child] = []
    env = dict(env)
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
    finally:
        for child in reversed(children):
            child.stop()


def run_demo(question: str | None, stream_mode: str, env: Mapping[str, str]) -> int:
    """Start everything, ask one question with tokens streaming, stop everything."""
    from agentloop.cli import ask
    from agentloop.scripted_model.demo import DEMO_QUESTION

    question = question or DEMO_QUESTION
    with services(env) as ports:
        up = ", ".join(f"{n} :{p}" for n, p in ports.items() if not n.endswith("_pid"))
        print(f"services up: {up}")
        print(f"> {question}\n", flush=True)
        return asyncio.run(
            ask(question, f"127.0.0.1:{ports['gateway']}", stream_mode=stream_mode, timeout_s=120)
        )
