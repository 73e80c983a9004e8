"""Running the scripted model as a standalone OpenAI-compatible server.

Standalone is how it serves demos, manual poking with curl, and benchmarks of services that are
configured with a model URL rather than started from Python. ``serve`` is separate from ``main``
so that another command line (such as the agentloop CLI) can embed the server in its own loop.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import signal
import sys
from collections.abc import Callable, Sequence

from agentloop.scripted_model.demo import demo_script
from agentloop.scripted_model.script import Script
from agentloop.scripted_model.server import ScriptedModelServer


def _milliseconds(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m agentloop.scripted_model",
        description="Serve a scripted, OpenAI-compatible /v1/chat/completions endpoint.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8400, help="0 picks a free port")
    parser.add_argument("--script", metavar="FILE.json", help="script to play (default: the built-in demo)")
    parser.add_argument("--api-key", help="require 'Authorization: Bearer KEY' on /v1 routes")
    parser.add_argument(
        "--first-token-ms", type=_milliseconds, help="override the script's first-token delay"
    )
    parser.add_argument("--per-token-ms", type=_milliseconds, help="override the script's per-token delay")
    parser.add_argument("--response-ms", type=_milliseconds, help="override the script's response delay")
    parser.add_argument(
        "--no-record", action="store_true", help="do not keep request bodies (for long benchmark runs)"
    )
    return parser


def load_script(args: argparse.Namespace) -> Script:
    """The script named on the command line (or the demo), with latency overrides applied."""
    script = Script.from_json_file(args.script) if args.script else demo_script()
    overrides = {
        name: getattr(args, name)
        for name in ("first_token_ms", "per_token_ms", "response_ms")
        if getattr(args, name) is not None
    }
    if overrides:
        script = dataclasses.replace(script, latency=dataclasses.replace(script.latency, **overrides))
    return script


async def serve(
    script: Script | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8400,
    api_key: str | None = None,
    record_requests: bool = True,
    stop: asyncio.Event | None = None,
    announce: Callable[[str], None] | None = None,
) -> None:
    """Serve until ``stop`` is set or SIGINT/SIGTERM arrives, then shut down gracefully.

    ``announce`` receives the one "listening" line (printed to stdout by default) once the port is
    bound, so a parent process or another CLI can wait for it.
    """
    server = ScriptedModelServer(
        script if script is not None else demo_script(), api_key, record_requests=record_requests
    )
    await server.start(host, port)
    stop_event = stop if stop is not None else asyncio.Event()
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(signum, stop_event.set)
        except (NotImplementedError, RuntimeError, ValueError):
            continue  # not the main thread, or a platform without loop signal handlers
        installed.append(signum)
    try:
        line = f"scripted model listening on {server.base_url}"
        if announce is None:
            print(line, flush=True)
        else:
            announce(line)
        await stop_event.wait()
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)
        await server.stop()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        script = load_script(args)
    except (OSError, ValueError) as exc:
        print(f"error: cannot load script: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(
            serve(
                script,
                host=args.host,
                port=args.port,
                api_key=args.api_key,
                record_requests=not args.no_record,
            )
        )
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    return 0
