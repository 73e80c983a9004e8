"""Commands for threads, runs, checkpoints and memories: one per RPC of the gateway.

agentloop thread ID / runs THREAD / checkpoints THREAD       read
agentloop watch RUN / cancel RUN                             follow or stop a run
agentloop approve RUN / reject RUN / edit RUN                decide an approval pause
agentloop memories [list] / memories delete ID               long-term memory
agentloop threads / fork THREAD CHECKPOINT                   list threads, branch one off
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from agentloop.cli.commands.common import (
    EXIT_CALL_FAILED,
    EXIT_OK,
    EXIT_PAUSED,
    EXIT_RUN_FAILED,
    connection_flags,
    paused_hint,
    to_json,
    with_client,
)
from agentloop.cli.commands.render import EventRenderer, short
from agentloop.client import AgentClient, ToolDecision, approve, edit, reject

Handler = Callable[[AgentClient, argparse.Namespace], Awaitable[int]]
HANDLERS: dict[str, Handler] = {}


def add_parsers(sub: Any) -> None:
    """Register every command of this module on the `agentloop` parser."""
    p = _command(sub, "thread", _thread, "a thread's messages and its latest run", "thread_id")
    p.add_argument("--checkpoint", default="", help="read the thread as of this checkpoint")

    p = _command(sub, "threads", _threads, "your threads, most recently updated first, with a preview")
    p.add_argument("--limit", type=int, default=100, help="at most this many (default 100)")

    _command(sub, "runs", _runs, "the runs of a thread, newest first, with their status", "thread_id")

    p = _command(sub, "checkpoints", _checkpoints, "a thread's checkpoints, oldest first", "thread_id")
    p.add_argument("--run", default="", help="only this run's checkpoints")

    p = _command(
        sub, "watch", _watch, "stream a run's events (stored, then live) until it ends or pauses", "run_id"
    )
    p.add_argument("--after", type=int, default=0, help="only events after this sequence")
    p.add_argument("--nodes", action="store_true", help="also print node events")

    _command(sub, "cancel", _cancel, "stop a run at its next safe point", "run_id")

    p = _command(
        sub, "approve", _decide, "approve a paused run's pending calls and stream the rest", "run_id"
    )
    p.add_argument("--call", action="append", help="only this pending call (repeatable); others are rejected")

    p = _command(
        sub, "reject", _decide, "reject a paused run's pending calls; the model reads the reason", "run_id"
    )
    p.add_argument("--reason", default="", help="what the model reads instead of a result")
    p.add_argument("--call", action="append", help="only this pending call (repeatable); others are approved")

    p = _command(
        sub, "edit", _decide, "run a paused call with other arguments (others are approved)", "run_id"
    )
    p.add_argument("--call", default="", help="the pending call; may be left out when only one waits")
    p.add_argument("--args", required=True, metavar="JSON", help="the arguments to run it with")

    p = _command(sub, "memories", _memories, "list or delete a user's long-term memories")
    p.add_argument("action", nargs="?", choices=["list", "delete"], default="list")
    p.add_argument("memory_id", nargs="?", default="", help="delete: the memory")

    p = _command(
        sub, "fork", _fork, "copy a thread as of a checkpoint into a new thread; prints its id", "thread_id"
    )
    p.add_argument("checkpoint_id", help="the checkpoint to branch from (see `agentloop checkpoints`)")
    p.add_argument("--new-thread", default="", help="id of the new thread (default: the gateway picks one)")


def _command(sub: Any, name: str, handler: Handler, help: str, *positionals: str) -> argparse.ArgumentParser:
    """A command's parser, with the connection flags every command takes; `handler` runs it."""
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help)
    for positional in positionals:
        parser.add_argument(positional)
    connection_flags(parser)
    HANDLERS[name] = handler
    return parser


async def dispatch(args: argparse.Namespace) -> int:
    """Run the command `args.command` with a client from its connection flags."""
    handler = HANDLERS[args.command]
    return await with_client(args, lambda client: handler(client, args))


async def _thread(client: AgentClient, args: argparse.Namespace) -> int:
    thread = await client.get_thread(args.thread_id, checkpoint_id=args.checkpoint)
    if args.json:
        print(to_json(thread))
        return EXIT_OK
    print(f"thread {thread.thread_id}  user {thread.user_id or '(anonymous)'}  updated {thread.updated_at}")
    for m in thread.messages:
        calls = "".join(f" → {c.name}({short(c.arguments_json, 60)})" for c in m.tool_calls)
        print(f"  {m.role:<9} {short(m.content, 100)}{calls}")
    if thread.run is not None:
        r = thread.run
        print(f"latest run {r.run_id}: {r.status} steps={r.steps_taken} stop_reason={r.stop_reason or '-'}")
    return EXIT_OK


async def _runs(client: AgentClient, args: argparse.Namespace) -> int:
    runs = await client.list_runs(args.thread_id)
    if args.json:
        print(to_json(runs))
        return EXIT_OK
    for r in runs:
        created = f"{r.created_at:%Y-%m-%d %H:%M:%S}" if r.created_at else "-"
        print(f"{r.run_id}  {r.status}  {created}  steps={r.steps_taken} stop_reason={r.stop_reason or '-'}")
    if not runs:
        print("(no runs)")
    return EXIT_OK


async def _checkpoints(client: AgentClient, args: argparse.Namespace) -> int:
    found = await client.checkpoints(args.thread_id, run_id=args.run)
    if args.json:
        print(to_json(found))
        return EXIT_OK
    for c in found:
        moves = f"{c.node} → {c.next_node or '(end)'}"
        print(f"{c.checkpoint_id}  {moves}  step={c.step}  messages={c.message_count}")
    return EXIT_OK


async def _watch(client: AgentClient, args: argparse.Namespace) -> int:
    renderer = _renderer(args)
    async for event in client.watch(args.run_id, after_sequence=args.after):
        renderer.handle(event)
    return _ended(renderer, args)


async def _cancel(client: AgentClient, args: argparse.Namespace) -> int:
    status = await client.cancel(args.run_id)
    print(
        json.dumps({"run_id": args.run_id, "status": status}) if args.json else f"run {args.run_id}: {status}"
    )
    return EXIT_OK


async def _decide(client: AgentClient, args: argparse.Namespace) -> int:
    paused = await client.pending(args.run_id)
    if paused is None:
        print(f"error [FAILED_PRECONDITION]: run {args.run_id} is not paused for approval", file=sys.stderr)
        return EXIT_CALL_FAILED
    ids = [c.tool_call_id for c in paused.pending]
    chosen = set(args.call or []) if args.command != "edit" else set()
    if args.command == "edit":
        chosen = {args.call} if args.call else set(ids[:1] if len(ids) == 1 else [])
        if not chosen:
            print(f"error: --call: several calls wait ({', '.join(ids)}); name one", file=sys.stderr)
            return EXIT_CALL_FAILED
    unknown = chosen - set(ids)
    if unknown:
        print(
            f"error: --call: {', '.join(sorted(unknown))} is not pending (pending: {', '.join(ids)})",
            file=sys.stderr,
        )
        return EXIT_CALL_FAILED
    decisions = [_decision(args, call_id, not chosen or call_id in chosen) for call_id in ids]
    renderer = _renderer(args)
    async for event in client.resume(args.run_id, decisions):
        renderer.handle(event)
    return _ended(renderer, args)


def _decision(args: argparse.Namespace, call_id: str, named: bool) -> ToolDecision:
    """The decision for one pending call: the command's own verdict when named, the opposite otherwise."""
    if args.command == "edit":
        return edit(call_id, args.args) if named else approve(call_id)
    if args.command == "reject":
        return reject(call_id, args.reason) if named else approve(call_id)
    return approve(call_id) if named else reject(call_id, "not approved")


async def _memories(client: AgentClient, args: argparse.Namespace) -> int:
    if args.action == "delete":
        if not args.memory_id:
            print("error: memories delete needs a memory id (see `agentloop memories`)", file=sys.stderr)
            return EXIT_CALL_FAILED
        await client.delete_memory(args.memory_id)
        print(f"deleted memory {args.memory_id}")
        return EXIT_OK
    found = await client.memories()
    if args.json:
        print(to_json(found))
        return EXIT_OK
    for m in found:
        print(
            f"{m.memory_id}  {m.created_at:%Y-%m-%d %H:%M}  {m.text}"
            if m.created_at
            else f"{m.memory_id}  {m.text}"
        )
    if not found:
        print("(no memories)")
    return EXIT_OK


async def _threads(client: AgentClient, args: argparse.Namespace) -> int:
    found = await client.list_threads(limit=max(1, args.limit))
    if args.json:
        print(to_json(found))
        return EXIT_OK
    rows = [
        (
            t.thread_id,
            f"{t.updated_at:%Y-%m-%d %H:%M:%S}" if t.updated_at else "-",
            t.latest_run_status or "-",
            short(t.preview, 60),
        )
        for t in found
    ]
    if not rows:
        print("(no threads)")
        return EXIT_OK
    width = max(len("THREAD"), *(len(r[0]) for r in rows))
    print(f"{'THREAD':<{width}}  {'UPDATED':<19}  {'STATUS':<9}  PREVIEW")
    for thread_id, updated, status, preview in rows:
        print(f"{thread_id:<{width}}  {updated:<19}  {status:<9}  {preview}")
    return EXIT_OK


async def _fork(client: AgentClient, args: argparse.Namespace) -> int:
    new_id = await client.fork(args.thread_id, args.checkpoint_id, args.new_thread or None)
    print(json.dumps({"thread_id": new_id}) if args.json else new_id)
    return EXIT_OK


def _renderer(args: argparse.Namespace) -> EventRenderer:
    return EventRenderer(show_nodes=getattr(args, "nodes", False))


def _ended(renderer: EventRenderer, args: argparse.Namespace) -> int:
    if renderer.final is None and renderer.error is None and renderer.interrupt is not None:
        print(paused_hint(renderer.interrupt), file=sys.stderr)
        return EXIT_PAUSED
    return EXIT_OK if renderer.final is not None else EXIT_RUN_FAILED
