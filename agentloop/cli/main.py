"""The `agentloop` command: run a service, ask a question, or run the whole demo.

agentloop serve reasoner|tools|gateway [--port N]   one service, one process
agentloop model-server [--port N] [--script F]      the scripted OpenAI-compatible model
agentloop ask "question"                            stream a run from a gateway
agentloop thread|runs|watch|cancel|approve|...      one command per gateway RPC (docs/cli.md)
agentloop demo                                      all of the above, as separate processes
agentloop dev --tools ./my_tools.py                 the three services in one process
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
import time
import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeVar

import grpc

from agentloop.cli import commands
from agentloop.kernel import eventloop, logs
from agentloop.kernel.setting_errors import SettingError, StartupError
from agentloop.kernel.settings import (
    GatewaySettings,
    ReasonerSettings,
    TlsSettings,
    ToolSettings,
    environment,
)
from agentloop.kernel.tls import open_channel
from tool_svc.loader import ToolModuleError
from tool_svc.mcp_config import McpConfigError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    SettingsT = TypeVar("SettingsT", bound=DataclassInstance)
else:
    SettingsT = TypeVar("SettingsT")


def _override(settings: SettingsT, **changes: object) -> SettingsT:
    """Settings with the flags that were given (None = not given) applied."""
    given = {k: v for k, v in changes.items() if v is not None}
    return dataclasses.replace(settings, **given)


async def _serve(args: argparse.Namespace) -> None:
    if args.service == "reasoner":
        from reasoner_svc.service import serve as serve_reasoner

        rs = ReasonerSettings.from_env()
        rs = _override(rs, host=args.host, port=args.port, base_url=args.base_url, model=args.model)
        await serve_reasoner(rs)
    elif args.service == "tools":
        from tool_svc.service import serve as serve_tools

        ts = ToolSettings.from_env()
        modules = tuple(ts.modules) + tuple(args.tools or ())
        ts = _override(
            ts,
            host=args.host,
            port=args.port,
            modules=modules,
            sql_database=args.sql_database,
            mcp_config=args.mcp_config,
        )
        await serve_tools(ts)
    else:
        from gateway.api.server import serve as serve_gateway

        gs = GatewaySettings.from_env()
        gs = _override(
            gs,
            host=args.host,
            port=args.port,
            reasoner_addr=args.reasoner,
            tools_addr=args.tools_addr,
            max_steps=args.max_steps,
        )
        await serve_gateway(gs)


async def health(addr: str, service: str, timeout_s: float) -> int:
    """0 when the server at `addr` reports SERVING for `service` ("" = the whole server).

    Prints the status, and why when the server says (agentloop.kernel.serving.Health).
    """
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from agentloop.kernel.serving import HEALTH_REASON_KEY

    async with open_channel(addr, TlsSettings.from_env()) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        call = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout_s)
        try:
            reply = await call
        except grpc.aio.AioRpcError as exc:
            print(f"{addr}: {exc.code().name} {exc.details()}", file=sys.stderr)
            return 1
        reason = dict(await call.trailing_metadata() or ()).get(HEALTH_REASON_KEY, "")
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    print(f"{addr}: {status}" + (f" ({reason})" if reason else ""))
    return 0 if reply.status == health_pb2.HealthCheckResponse.SERVING else 1


async def database(args: argparse.Namespace) -> int:
    """`agentloop db upgrade|current|prune|wait` against DATABASE_URL (or --url)."""
    from gateway.store import migrate
    from gateway.store.factory import check_reachable, open_store, resolve_url

    settings = GatewaySettings.from_env()
    url = resolve_url(args.url or settings.database_url or None)
    if args.action != "wait":  # `wait` keeps trying for its own --timeout-s
        await check_reachable(url, settings.db_connect_s)
    if args.action == "upgrade":
        await migrate.upgrade_async(url, args.revision)
        print(f"database at revision {await migrate.current_revision_async(url)}")
    elif args.action == "current":
        print(await migrate.current_revision_async(url) or "(empty database)")
    elif args.action == "wait":
        return await _wait_for_schema(url, args.timeout_s)
    else:
        if args.keep_last < 1 and args.idle_ttl_s <= 0:
            print("nothing to prune: give --keep-last N and/or --idle-ttl-s S", file=sys.stderr)
            return 2
        store = await open_store(url, migrate=False)
        try:
            keep = args.keep_last if args.keep_last >= 1 else 1_000_000_000
            stats = await store.prune(keep, args.idle_ttl_s or None)
        finally:
            await store.close()
        print(f"deleted {stats.checkpoints_deleted} checkpoints and {stats.threads_deleted} threads")
    return 0


async def _wait_for_schema(url: str, timeout_s: float) -> int:
    """0 once the database is at this code's newest revision (the migration Job has run), 1 on timeout.

    What a gateway started with AGENTLOOP_DB_MIGRATE=0 waits on (a Kubernetes
    init container), so it never serves against an older schema.
    """
    from gateway.store import migrate

    head = migrate.head_revision()
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            current = await migrate.current_revision_async(url)
        except Exception as exc:  # the database may not accept connections yet
            current = f"unreachable ({type(exc).__name__})"
        if current == head:
            print(f"database at revision {head}")
            return 0
        if time.monotonic() >= deadline:
            print(f"database at {current or '(empty database)'}, not {head}", file=sys.stderr)
            return 1
        await asyncio.sleep(min(2.0, max(0.0, deadline - time.monotonic())))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentloop", description=__doc__.splitlines()[0] if __doc__ else "")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run one service in this process")
    serve.add_argument("service", choices=["reasoner", "tools", "gateway"])
    serve.add_argument("--host", default=None, help="bind address (AGENTLOOP_HOST)")
    serve.add_argument("--port", type=int, default=None, help="port; 0 picks a free one")
    serve.add_argument(
        "--base-url", default=None, help="reasoner: OpenAI-compatible base URL (OPENAI_BASE_URL)"
    )
    serve.add_argument("--model", default=None, help="reasoner: default model (AGENTLOOP_MODEL)")
    serve.add_argument(
        "--tools",
        action="append",
        metavar="MODULE_OR_FILE",
        help="tools: a module (pkg.tools) or file (./tools.py) of @tool functions (repeatable)",
    )
    serve.add_argument(
        "--mcp-config",
        default=None,
        metavar="FILE",
        help="tools: MCP servers to serve (AGENTLOOP_MCP_CONFIG)",
    )
    serve.add_argument(
        "--debug", action="store_true", help="log at DEBUG and show tracebacks of start-up errors"
    )
    serve.add_argument("--sql-database", default=None, help="tools: path of the sample SQLite database")
    serve.add_argument(
        "--reasoner",
        default=None,
        help="gateway: reasoner host:port, ip:port list or dns:///name:port (AGENTLOOP_REASONER_ADDR)",
    )
    serve.add_argument(
        "--tools-addr", default=None, help="gateway: tool service address, same forms (AGENTLOOP_TOOLS_ADDR)"
    )
    serve.add_argument("--max-steps", type=int, default=None, help="gateway: default step limit")

    # Only listed here for --help: main() hands `model-server ...` to the scripted model's own parser.
    sub.add_parser(
        "model-server", help="run the scripted OpenAI-compatible model server (--help for options)"
    )

    commands.add_parsers(sub)

    db = sub.add_parser("db", help="database schema and retention")
    db.add_argument("action", choices=["upgrade", "current", "prune", "wait"])
    db.add_argument(
        "--url", default=None, help="database URL (DATABASE_URL; empty = the embedded SQLite file)"
    )
    db.add_argument("--revision", default="head", help="upgrade: target revision")
    db.add_argument("--keep-last", type=int, default=0, help="prune: keep each run's newest N checkpoints")
    db.add_argument("--idle-ttl-s", type=float, default=0.0, help="prune: delete threads idle this long")
    db.add_argument(
        "--timeout-s", type=float, default=300.0, help="wait: how long to wait for the newest revision"
    )

    health_p = sub.add_parser("health", help="check a service through grpc.health.v1 (exit 0 = serving)")
    health_p.add_argument("addr", help="host:port")
    health_p.add_argument("--service", default="", help="service name; empty checks the whole server")
    health_p.add_argument("--timeout", type=float, default=3.0)

    demo = sub.add_parser("demo", help="start the scripted model and the three services, then ask")
    demo.add_argument("question", nargs="?", default=None)
    demo.add_argument("--stream", choices=["all", "final", "none"], default="final")

    dev = sub.add_parser("dev", help="reasoner, tools and gateway in one process, tools reloaded on change")
    dev.add_argument("--tools", action="append", metavar="MODULE_OR_FILE", help="a tool module (repeatable)")
    dev.add_argument(
        "--port", type=int, default=None, help="gateway port (default AGENTLOOP_GATEWAY_PORT or 50050)"
    )
    dev.add_argument("--script", default=None, help="scripted model's script (JSON); default the demo")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `agentloop` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["model-server"]:
        from agentloop.scripted_model.cli import main as model_main

        return model_main(argv[1:])
    args = _parser().parse_args(argv)
    debug = bool(getattr(args, "debug", False))
    logs.configure(_log_level(args.command, debug))
    try:
        return _run(args, debug)
    except SettingError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return 2
    except StartupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _log_level(command: str, debug: bool) -> str:
    """Services log what they do; one-shot commands stay quiet so their output is readable."""
    if debug:
        return "DEBUG"
    return "WARNING" if command in {"demo", "health", "db", *commands.NAMES} else "INFO"


def _run(args: argparse.Namespace, debug: bool) -> int:
    """Run the parsed command; the exit status."""
    if args.command == "serve":
        return _serve_or_explain(args, debug)
    if args.command in commands.NAMES:
        return asyncio.run(commands.dispatch(args))
    if args.command == "dev":
        from agentloop.cli.dev import run_dev

        return run_dev(args.tools or (), args.port, args.script)
    if args.command == "db":
        return asyncio.run(database(args))
    if args.command == "health":
        return asyncio.run(health(args.addr, args.service, args.timeout))
    from agentloop.cli.demo import run_demo

    return run_demo(args.question, args.stream, dict(environment()))


def _serve_or_explain(args: argparse.Namespace, debug: bool) -> int:
    """Serve until stopped; a tool module or MCP config that cannot load is one line, not a traceback."""
    try:
        eventloop.run(_serve(args))
    except (ToolModuleError, McpConfigError) as exc:
        if debug:
            traceback.print_exc()
        print(f"agentloop serve {args.service}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
