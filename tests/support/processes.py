"""agentloop services as child processes on fixed ports: killed with SIGKILL, restarted on the same port.

The in-process stack (tests/support/stack.py) cannot lose a server the way a
crashed pod does; these can. `Child` blocks until the process prints its port,
so starting one runs in a thread and keeps the test's event loop (the gateway
under test) serving meanwhile.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from agentloop.cli.demo import Child
from tests.support.net import free_port

REPO_ROOT = Path(__file__).resolve().parents[2]


class ServiceProcess:
    """`agentloop serve <service> --port <port> <args>`, startable again after a kill."""

    def __init__(
        self,
        service: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        port: int | None = None,
    ) -> None:
        self.service = service
        self.port = port or free_port()
        self.env = dict(os.environ)
        self.env.update(
            PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
            AGENTLOOP_LOG_LEVEL="WARNING",
            **(env or {}),
        )
        self.argv = [
            sys.executable, "-m", "agentloop.cli", "serve", service, "--port", str(self.port), *args,
        ]  # fmt: skip
        self.log_dir = Path(tempfile.mkdtemp(prefix=f"agentloop-{service}-"))
        self.children: list[Child] = []

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return bool(self.children) and self.children[-1].proc.poll() is None

    async def start(self) -> Child:
        name = f"{self.service}-{self.port}-{len(self.children) + 1}"
        child = await asyncio.to_thread(Child, name, self.argv, self.env, str(self.log_dir / f"{name}.log"))
        assert child.port == self.port
        self.children.append(child)
        return child

    async def kill(self) -> None:
        """SIGKILL: no graceful shutdown, connections reset mid-call."""
        child = self.children[-1]
        child.proc.kill()
        await asyncio.to_thread(child.proc.wait)

    async def stop(self) -> None:
        for child in self.children:
            await asyncio.to_thread(child.stop)
