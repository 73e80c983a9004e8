"""What every client command shares: connection flags, the client they make, errors as one line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import asdict, is_dataclass
from datetime import datetime
from typing import Any

from agentloop.client import AgentClient, ClientError, Interrupt
from agentloop.kernel.settings import gateway_addr

EXIT_OK = 0
EXIT_RUN_FAILED = 1
EXIT_CALL_FAILED = 2
EXIT_PAUSED = 3
EXIT_INTERRUPTED = 130


def connection_flags(parser: argparse.ArgumentParser, *, json_flag: bool = True) -> None:
    """--gateway, --token, --user, --timeout (and --json) on a command."""
    parser.add_argument("--gateway", default=None, help="gateway address (AGENTLOOP_GATEWAY_ADDR)")
    parser.add_argument("--token", default=None, help="bearer token (AGENTLOOP_TOKEN)")
    parser.add_argument("--user", default="", help="user id (ignored when the token decides the user)")
    parser.add_argument("--timeout", type=float, default=None, help="deadline of the call, seconds")
    if json_flag:
        parser.add_argument("--json", action="store_true", help="print JSON for scripts")


def make_client(args: argparse.Namespace) -> AgentClient:
    """An AgentClient from the connection flags; TLS comes from AGENTLOOP_TLS_* as for every client."""
    return AgentClient(
        args.gateway or gateway_addr(),
        token=args.token,
        user_id=args.user,
        timeout=args.timeout or 30.0,
        run_timeout=args.timeout,
    )


async def with_client(args: argparse.Namespace, body: Callable[[AgentClient], Awaitable[int]]) -> int:
    """Run `body` with a client; a failed call prints one line `error [CODE]: details` and gives 2."""
    async with make_client(args) as client:
        try:
            return await body(client)
        except ClientError as exc:
            print(f"error [{exc.code}]: {exc.details}", file=sys.stderr)
            return EXIT_CALL_FAILED


def to_json(value: Any) -> str:
    """Client values (dataclasses, lists of them, datetimes) as indented JSON."""

    def plain(obj: Any) -> Any:
        if is_dataclass(obj) and not isinstance(obj, type):
            return {k: plain(v) for k, v in asdict(obj).items()}
        if isinstance(obj, list | tuple):
            return [plain(v) for v in obj]
        if isinstance(obj, dict):
            return {k: plain(v) for k, v in obj.items()}
        if isinstance(obj, datetime):
            return obj.isoformat()
        return obj

    return json.dumps(plain(value), indent=2, ensure_ascii=False)


def paused_hint(interrupt: Interrupt) -> str:
    """How to decide a paused run from the command line."""
    run = interrupt.run_id
    return (
        f"run {run} is paused for approval; decide with\n"
        f"  agentloop approve {run}            (all pending calls)\n"
        f"  agentloop reject {run} --reason TEXT\n"
        f"  agentloop edit {run} --call ID --args JSON"
    )
