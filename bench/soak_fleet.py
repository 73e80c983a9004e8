"""The soak's processes: scripted model, reasoner, ToolService and two gateways, killable and restartable.

Every service listens on a port fixed for the whole soak, so a service killed
with SIGKILL comes back where its clients (and the gateways) expect it. The
model server is the soak's stand-in for the provider and is never killed.
Each incarnation writes its stderr to its own log file in the work directory.
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentloop.cli.demo import Child

REPO_ROOT = Path(__file__).resolve().parents[1]
TOOL_MODULE = "tests.fixtures.soak_tools"
TOOL_LOG_ENV = "AGENTLOOP_SOAK_TOOL_LOG"
GATEWAYS = ("gateway-a", "gateway-b")
SERVICES = ("reasoner", "tools", *GATEWAYS)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def kind_of(name: str) -> str:
    """The service kind of a process name: reasoner, tools or gateway."""
    return "gateway" if name.startswith("gateway") else name


@dataclass
class Service:
    """One service on its fixed port; `child` is None while it is down."""

    name: str
    port: int
    argv: list[str]
    env: Mapping[str, str]
    logs: Path
    child: Child | None = None
    incarnations: int = 0
    history: list[tuple[float, bool]] = field(default_factory=list)
    """(monotonic time, up) at each start and kill."""

    @property
    def up(self) -> bool:
        return self.child is not None

    async def start(self) -> None:
        self.incarnations += 1
        log = self.logs / f"{self.name}-{self.incarnations}.log"
        child = await asyncio.to_thread(Child, self.name, self.argv, self.env, str(log))
        if child.port != self.port:
            await asyncio.to_thread(child.stop)
            raise RuntimeError(f"{self.name} came up on port {child.port}, not {self.port}")
        self.child = child
        self.history.append((time.monotonic(), True))

    async def kill(self) -> None:
        """SIGKILL: no shutdown path runs, leases and in-flight calls are left as they are."""
        child, self.child = self.child, None
        if child is not None:
            self.history.append((time.monotonic(), False))
            child.proc.kill()
            await asyncio.to_thread(child.proc.wait)

    def up_for(self, at: float) -> float:
        """How long the service had been up at monotonic time `at` (0 when it was down)."""
        since = 0.0
        for when, up in self.history:
            if when > at:
                break
            since = when if up else -1.0
        return at - since if since >= 0 else 0.0

    async def stop(self) -> None:
        child, self.child = self.child, None
        if child is not None:
            await asyncio.to_thread(child.stop)


@dataclass
class Fleet:
    """All processes of the soak and what was done to them."""

    model: Child
    services: dict[str, Service]
    tool_log: Path
    kills: Counter[str] = field(default_factory=Counter)
    outages: list[float] = field(default_factory=list)

    def addresses(self) -> Sequence[str]:
        """The gateways that are up (both, when none is: a client then meets a refused connection)."""
        up = [f"127.0.0.1:{self.services[g].port}" for g in GATEWAYS if self.services[g].up]
        return up or [f"127.0.0.1:{self.services[g].port}" for g in GATEWAYS]

    def gateway_address(self) -> str:
        return f"127.0.0.1:{self.services[GATEWAYS[0]].port}"

    async def kill(self, name: str) -> None:
        await self.services[name].kill()
        self.kills[kind_of(name)] += 1

    async def stop(self) -> None:
        for name in reversed(SERVICES):
            await self.services[name].stop()
        await asyncio.to_thread(self.model.stop)


async def start_fleet(
    database_url: str, script_path: Path, workdir: Path, lease_s: float, orphan_scan_s: float
) -> Fleet:
    """Start the model, then reasoner and tools, then the gateways one after the other (they migrate)."""
    logs = workdir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    tool_log = workdir / "tool-calls.jsonl"
    env = dict(os.environ)
    env.pop("OPENAI_BASE_URL", None)
    env.update(
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
        AGENTLOOP_LOG_LEVEL="WARNING",
        DATABASE_URL=database_url,
        AGENTLOOP_LEASE_S=str(lease_s),
        AGENTLOOP_ORPHAN_SCAN_S=str(orphan_scan_s),
        **{TOOL_LOG_ENV: str(tool_log)},
    )
    cli = [sys.executable, "-m", "agentloop.cli"]
    model_argv = [*cli, "model-server", "--port", "0", "--script", str(script_path), "--no-record"]
    model = await asyncio.to_thread(Child, "model", model_argv, env, str(logs / "model.log"))
    ports = {name: free_port() for name in SERVICES}
    upstream = [
        "--reasoner", f"127.0.0.1:{ports['reasoner']}", "--tools-addr", f"127.0.0.1:{ports['tools']}",
    ]  # fmt: skip
    argv = {
        "reasoner": [*cli, "serve", "reasoner", "--port", str(ports["reasoner"]),
                     "--base-url", f"http://127.0.0.1:{model.port}/v1"],
        "tools": [*cli, "serve", "tools", "--port", str(ports["tools"]), "--tools", TOOL_MODULE],
        **{g: [*cli, "serve", "gateway", "--port", str(ports[g]), *upstream] for g in GATEWAYS},
    }  # fmt: skip
    fleet = Fleet(model, {n: Service(n, ports[n], argv[n], env, logs) for n in SERVICES}, tool_log)
    try:
        for name in SERVICES:
            await fleet.services[name].start()
    except BaseException:
        await fleet.stop()
        raise
    return fleet


@dataclass
class ChaosPlan:
    """When to kill what, drawn from a seeded generator before the soak starts."""

    kills: list[tuple[float, str, float]]
    """(seconds after the start, service kind, seconds down) in time order."""
    outage_at: float | None
    outage_s: float


def plan_chaos(
    seed: int, duration_s: float, kill_every_s: float, pause_s: tuple[float, float], outage_s: float
) -> ChaosPlan:
    """Kills at exponential intervals (every kind at least once, first), and one reasoner outage."""
    rng = random.Random(seed)
    kinds = ["reasoner", "tools", "gateway"]
    rng.shuffle(kinds)
    kills: list[tuple[float, str, float]] = []
    at = min(3.0, duration_s / 10)
    last_kill = duration_s * 0.9
    while True:
        at += rng.expovariate(1 / kill_every_s)
        if at >= last_kill:
            break
        kind = kinds[len(kills)] if len(kills) < len(kinds) else rng.choice(["reasoner", "tools", "gateway"])
        kills.append((at, kind, rng.uniform(*pause_s)))
    outage_at = duration_s * rng.uniform(0.3, 0.5) if outage_s > 0 else None
    if outage_at is not None and outage_at + outage_s > duration_s:
        outage_at = max(0.0, duration_s - outage_s - 1)
    return ChaosPlan(kills, outage_at, outage_s)


async def _reasoner_outage(fleet: Fleet, outage_at: float, outage_s: float, started: float) -> None:
    """The reasoner down for `outage_s` from `outage_at`; its length goes to fleet.outages."""
    await asyncio.sleep(max(0.0, started + outage_at - time.monotonic()))
    reasoner = fleet.services["reasoner"]
    for _ in range(600):  # a short kill may still be restarting it
        if reasoner.up:
            break
        await asyncio.sleep(0.1)
    began = time.monotonic()
    await fleet.kill("reasoner")
    await asyncio.sleep(outage_s)
    await reasoner.start()
    fleet.outages.append(round(time.monotonic() - began, 2))


async def _gateway_to_kill(fleet: Fleet, rng: random.Random) -> str:
    """A gateway to kill, or "" while one is still down: one must stay up to adopt the killed one's runs."""
    for _ in range(100):
        if all(fleet.services[g].up for g in GATEWAYS):
            break
        await asyncio.sleep(0.1)
    candidates = [g for g in GATEWAYS if fleet.services[g].up]
    return rng.choice(candidates) if len(candidates) == len(GATEWAYS) else ""


async def unleash(fleet: Fleet, plan: ChaosPlan, started: float, rng_seed: int) -> None:
    """Carry out the plan against the fleet; returns once everything killed is back up."""
    rng = random.Random(rng_seed)
    restarts: list[asyncio.Task[None]] = []
    outage_until = 0.0

    async def down_for(name: str, seconds: float) -> None:
        await asyncio.sleep(seconds)
        await fleet.services[name].start()

    outage_task = None
    if plan.outage_at is not None:
        outage_task = asyncio.create_task(_reasoner_outage(fleet, plan.outage_at, plan.outage_s, started))
        outage_until = started + plan.outage_at + plan.outage_s + 10
    for at, kind, pause in plan.kills:
        await asyncio.sleep(max(0.0, started + at - time.monotonic()))
        if kind == "gateway":
            name = await _gateway_to_kill(fleet, rng)
        else:
            in_outage = plan.outage_at is not None and started + plan.outage_at - 2 < time.monotonic()
            name = "" if kind == "reasoner" and in_outage and time.monotonic() < outage_until else kind
        if not name or not fleet.services[name].up:
            continue
        await fleet.kill(name)
        restarts.append(asyncio.create_task(down_for(name, pause)))
    if outage_task is not None:
        await outage_task
    await asyncio.gather(*restarts)
