"""The client commands of `agentloop`: ask, and one command per gateway RPC (agentloop.client underneath)."""

from __future__ import annotations

import argparse
from typing import Any

from agentloop.cli.commands import ask, runs

NAMES = frozenset(
    [
        "ask",
        "thread",
        "runs",
        "checkpoints",
        "watch",
        "cancel",
        "approve",
        "reject",
        "edit",
        "memories",
        "threads",
        "fork",
    ]
)
"""The commands of this package (they log warnings only, like every client command)."""


def add_parsers(sub: Any) -> None:
    """Add ask and the RPC commands to the `agentloop` parser's subcommands."""
    ask.add_parser(sub)
    runs.add_parsers(sub)


async def dispatch(args: argparse.Namespace) -> int:
    """Run one client command; its exit status."""
    if args.command == "ask":
        return await ask.run_from_args(args)
    return await runs.dispatch(args)
