"""`agentloop dev`: the reasoner, the tool service and the gateway in one process, for development.

Three gRPC servers built by the services' own ``create_server`` functions, talking to each
other over loopback exactly as separate processes would; only the packaging differs. The
gateway keeps threads in the embedded SQLite file (DATABASE_URL to use another database),
and the model is the scripted one unless OPENAI_BASE_URL names a real endpoint.

Tool modules (``--tools ./my_tools.py`` or ``--tools pkg.module``, from the current directory)
are watched: when one of their files changes, the modules are imported again and the tool
service is restarted on the same port with the new registry; a module that no longer imports
leaves the running tools in place and says why in one line.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib
import importlib.util
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from agentloop.kernel.serving import Server
from agentloop.kernel.settings import GatewaySettings, ReasonerSettings, ToolSettings, model_endpoint_named
from agentloop.scripted_model import Script, ScriptedModelServer, demo_script
from gateway.api.server import create_server as create_gateway
from reasoner_svc.service import create_server as create_reasoner
from tool_svc import ToolRegistry
from tool_svc.builtins import default_registry
from tool_svc.loader import ToolModuleError, load_modules
from tool_svc.service import create_server as create_tools

log = logging.getLogger("agentloop.cli.dev")
POLL_S = 0.5


@dataclasses.dataclass(frozen=True)
class ToolModule:
    """A tool module as named on the command line: its import name and its file."""

    name: str
    path: Path


def resolve(spec: str, cwd: Path | None = None) -> ToolModule:
    """The module behind ``spec``: a file path (``./tools.py``) or a dotted name found from ``cwd``.

    The file's directory (or ``cwd``) goes first on sys.path, so the module imports its
    neighbours as it would when run from there.
    """
    cwd = cwd or Path.cwd()
    if spec.endswith(".py") or os.sep in spec:
        path = (cwd / spec).resolve()
        if not path.is_file():
            raise ToolModuleError(f"tool module {spec!r}: no such file {path}")
        _on_path(path.parent)
        return ToolModule(path.stem, path)
    _on_path(cwd)
    found = importlib.util.find_spec(spec)
    if found is None or found.origin is None:
        raise ToolModuleError(f"tool module {spec!r}: not found from {cwd} (a module name or a .py file)")
    return ToolModule(spec, Path(found.origin))


def _on_path(directory: Path) -> None:
    if str(directory) not in sys.path:
        sys.path.insert(0, str(directory))


def build_registry(modules: Sequence[ToolModule], settings: ToolSettings) -> ToolRegistry:
    """The built-in tools plus the modules, imported afresh (a changed file is read again)."""
    for module in modules:
        loaded = sys.modules.get(module.name)
        if loaded is not None:
            try:
                importlib.reload(loaded)
            except Exception as exc:
                raise ToolModuleError(f"tool module {module.path}: {type(exc).__name__}: {exc}") from exc
    registry = default_registry(settings)
    load_modules(registry, [m.name for m in modules])
    return registry


def _mtimes(modules: Sequence[ToolModule]) -> dict[Path, float]:
    times = {}
    for module in modules:
        with contextlib.suppress(OSError):
            times[module.path] = module.path.stat().st_mtime
    return times


class ToolServer:
    """The tool service of the dev process, restarted on the same port when its modules change."""

    def __init__(self, modules: Sequence[ToolModule], settings: ToolSettings) -> None:
        self.modules = modules
        self.settings = settings
        self.server: Server | None = None
        self.restarts = 0

    async def start(self) -> int:
        registry = build_registry(self.modules, self.settings)
        self.server = await create_tools(self.settings, registry)
        self.settings = dataclasses.replace(self.settings, port=self.server.port)
        return self.server.port

    async def reload(self) -> None:
        """Serve the modules as they are now; keep the old tools when they no longer load."""
        try:
            registry = build_registry(self.modules, self.settings)
        except ToolModuleError as exc:
            print(f"tools not reloaded: {exc}", file=sys.stderr, flush=True)
            return
        await self.stop()
        self.server = await create_tools(self.settings, registry)
        self.restarts += 1
        print(f"tools reloaded: {', '.join(registry.names())}", flush=True)

    async def watch(self, stop: asyncio.Event) -> None:
        """Poll the modules' files; reload when one changed (no file-watching dependency needed)."""
        seen = _mtimes(self.modules)
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), POLL_S)
            now = _mtimes(self.modules)
            if now != seen:
                seen = now
                await self.reload()

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.aclose(1.0)


async def serve_dev(tool_specs: Sequence[str], port: int | None, script: Script | None) -> None:
    """Run the dev stack until SIGINT/SIGTERM."""
    modules = [resolve(spec) for spec in tool_specs]
    async with contextlib.AsyncExitStack() as running:
        model: ScriptedModelServer | None = None
        reasoner_settings = dataclasses.replace(ReasonerSettings.from_env(), host="127.0.0.1", port=0)
        if not model_endpoint_named():
            model = ScriptedModelServer(script or demo_script())
            await model.start()
            running.push_async_callback(model.stop)
            reasoner_settings = dataclasses.replace(reasoner_settings, base_url=model.base_url)
        tool_settings = dataclasses.replace(ToolSettings.from_env(), host="127.0.0.1", port=0, modules=())
        tools = ToolServer(modules, tool_settings)
        running.push_async_callback(tools.stop)
        tools_port = await tools.start()
        reasoner = await create_reasoner(reasoner_settings)
        running.push_async_callback(reasoner.aclose, 1.0)
        gateway_settings = GatewaySettings.from_env()
        gateway_settings = dataclasses.replace(
            gateway_settings,
            port=gateway_settings.port if port is None else port,
            reasoner_addr=f"127.0.0.1:{reasoner.port}",
            tools_addr=f"127.0.0.1:{tools_port}",
        )
        gateway = await create_gateway(gateway_settings)
        running.push_async_callback(gateway.aclose, 1.0)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        where = "the scripted model" if model is not None else reasoner_settings.base_url
        print(
            f"agentloop dev: reasoner :{reasoner.port} ({where}), tools :{tools_port}, "
            f"watching {len(modules)} tool module(s)\n"
            f"gateway listening on port {gateway.port}",
            flush=True,
        )
        watcher = asyncio.create_task(tools.watch(stop))
        try:
            await stop.wait()
        finally:
            stop.set()
            await watcher  # a reload in progress ends before the tool service stops


def run_dev(tool_specs: Sequence[str], port: int | None, script_path: str | None) -> int:
    """`agentloop dev`: 0 after a clean stop, 1 when a tool module cannot be loaded at start."""
    try:
        script = Script.from_json_file(script_path) if script_path else None
        asyncio.run(serve_dev(tool_specs, port, script))
    except ToolModuleError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0
