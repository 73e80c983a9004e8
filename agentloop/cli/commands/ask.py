"""`agentloop ask`: stream one run, decide approval pauses, cancel it with Ctrl-C.

Ctrl-C once cancels the run (it stops at its next safe point and the thread stays valid);
Ctrl-C again detaches and leaves the run going, with the command that watches it. An
approval pause asks y / n / edit for each pending call on a terminal, approves every call
with --yes, and otherwise prints how to decide it later (exit status 3).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentloop.cli.commands.common import (
    EXIT_CALL_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PAUSED,
    EXIT_RUN_FAILED,
    connection_flags,
    paused_hint,
)
from agentloop.cli.commands.render import EventRenderer
from agentloop.client import (
    AgentClient,
    ClientError,
    Event,
    PendingCall,
    ToolDecision,
    approve,
    edit,
    reject,
)
from agentloop.kernel.settings import gateway_addr

STREAM_CHOICES = ("final", "all", "none")
MAX_SCHEMA_BYTES = 256 * 1024

Prompt = Callable[[str], Awaitable[str]]


def add_parser(sub: Any) -> None:
    p = sub.add_parser("ask", help="ask a gateway a question and stream the answer")
    p.add_argument("question")
    connection_flags(p)
    p.add_argument("--thread", default="", help="thread to continue; empty starts a new one")
    p.add_argument("--system", default=None, help="system prompt of the run")
    p.add_argument("--model", default=None, help="model name passed to the model endpoint")
    p.add_argument(
        "--output-schema", metavar="FILE", default=None, help="JSON Schema the answer must satisfy"
    )
    p.add_argument("--max-steps", type=int, default=0)
    p.add_argument("--stream", choices=STREAM_CHOICES, default="final", help="which steps stream")
    p.add_argument(
        "--approve", action="append", metavar="TOOL", help="pause before calls of TOOL ('*' = all)"
    )
    p.add_argument("--yes", action="store_true", help="approve every paused call without asking")
    p.add_argument("--nodes", action="store_true", help="also print node_start/node_end events")


async def run_from_args(args: argparse.Namespace) -> int:
    schema = None
    if args.output_schema:
        try:
            schema = load_schema(args.output_schema)
        except (OSError, ValueError) as exc:
            print(f"--output-schema: {args.output_schema}: {exc}", file=sys.stderr)
            return EXIT_CALL_FAILED
    return await ask(
        args.question,
        args.gateway or gateway_addr(),
        max_steps=args.max_steps,
        stream_mode=args.stream,
        thread_id=args.thread,
        user_id=args.user,
        show_nodes=args.nodes,
        timeout_s=args.timeout,
        token=args.token,
        system=args.system,
        model=args.model,
        output_schema=schema,
        require_approval=args.approve or (),
        yes=args.yes,
        as_json=args.json,
    )


def load_schema(path: str) -> Any:
    """The JSON Schema in `path`, read with a size bound; ValueError when it is not a JSON object."""
    with Path(path).open("rb") as f:
        raw = f.read(MAX_SCHEMA_BYTES + 1)
    if len(raw) > MAX_SCHEMA_BYTES:
        raise ValueError(f"larger than {MAX_SCHEMA_BYTES} bytes")
    schema = json.loads(raw)
    if not isinstance(schema, dict):
        raise ValueError("not a JSON object")
    return schema


@dataclass
class _State:
    """What Ctrl-C presses and the stream have told so far."""

    run_id: str = ""
    presses: int = 0
    cancel_task: asyncio.Task[str] | None = None
    prompting: bool = False
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)


async def ask(
    question: str,
    addr: str,
    *,
    max_steps: int = 0,
    stream_mode: str = "final",
    thread_id: str = "",
    user_id: str = "",
    show_nodes: bool = False,
    timeout_s: float | None = None,
    token: str | None = None,
    system: str | None = None,
    model: str | None = None,
    output_schema: Any = None,
    require_approval: tuple[str, ...] | list[str] = (),
    yes: bool = False,
    as_json: bool = False,
    prompt: Prompt | None = None,
) -> int:
    """Stream one run from the gateway at `addr` to stdout.

    0 when it ended with an answer, 1 when it failed, 2 when a call was refused,
    3 when it is paused for approval, 130 when Ctrl-C cancelled or left it.
    """
    renderer = EventRenderer(out=io.StringIO() if as_json else None, show_nodes=show_nodes)
    client = AgentClient(addr, token=token or None, user_id=user_id, run_timeout=timeout_s)
    state = _State()
    main = asyncio.current_task()
    assert main is not None
    asker = _asker(prompt, as_json)
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, _on_sigint, client, state, main, renderer)
    try:
        stream = client.run(
            question,
            thread_id=thread_id,
            max_steps=max_steps or None,
            stream=stream_mode,
            system=system,
            model=model,
            output_schema=output_schema,
            require_approval=list(require_approval),
        )
        while True:
            await _consume(stream, renderer, client, state)
            paused = renderer.interrupt
            if paused is None or state.presses:
                break
            decisions = await _decisions(paused.pending, state, approve_all=yes, ask_line=asker)
            if decisions is None:
                break
            renderer.interrupt = None
            stream = client.resume(paused.run_id, decisions)
        if state.cancel_task is not None:
            await state.cancel_task
    except asyncio.CancelledError:
        return _detached_or_cancelled(state, renderer)
    except ClientError as exc:
        print(f"error [{exc.code}]: {exc.details}", file=sys.stderr)
        return EXIT_CALL_FAILED
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)
        await client.close()
    return _outcome(renderer, state, as_json)


def _asker(prompt: Prompt | None, as_json: bool) -> Prompt | None:
    """Who decides paused calls here: the given prompt, else a person at the terminal.

    No one does when the output is JSON (a program reads it) or stdin is not
    a terminal: the run stays paused and the outcome says how to decide later.
    """
    if as_json:
        return None
    if prompt is not None:
        return prompt
    return _read_line if sys.stdin.isatty() else None


async def _decisions(
    pending: Sequence[PendingCall], state: _State, *, approve_all: bool, ask_line: Prompt | None
) -> list[ToolDecision] | None:
    """A decision per paused call, or None when no one here can decide (the outcome says how to, later).

    While a person decides, a Ctrl-C that cancels the run also stops the questions.
    """
    if approve_all:
        return [approve(c) for c in pending]
    if ask_line is None:
        return None
    state.prompting = True
    try:
        decisions = [await _decide(call, ask_line) for call in pending]
    except EOFError:  # no one left to ask
        return None
    state.prompting = False
    return decisions


async def _consume(
    stream: AsyncIterator[Event], renderer: EventRenderer, client: AgentClient, state: _State
) -> None:
    async for event in stream:
        renderer.handle(event)
        if not state.run_id:
            state.run_id = event.run_id
            if state.presses and state.cancel_task is None:  # Ctrl-C came before the run had an id
                state.cancel_task = asyncio.create_task(client.cancel(state.run_id))


def _on_sigint(client: AgentClient, state: _State, main: asyncio.Task[Any], renderer: EventRenderer) -> None:
    state.presses += 1
    if state.presses > 1:
        main.cancel()
        return
    renderer.line("^C cancelling the run (Ctrl-C again to leave it running)")
    if state.run_id:
        state.cancel_task = asyncio.create_task(client.cancel(state.run_id))
        if state.prompting:  # nothing streams while a person decides: stop asking once cancelled
            state.cancel_task.add_done_callback(lambda _: main.cancel())


def _detached_or_cancelled(state: _State, renderer: EventRenderer) -> int:
    run = state.run_id or "(not started)"
    if state.presses > 1:
        renderer.line(f"detached; run {run} goes on. Watch it with: agentloop watch {run}")
    else:
        renderer.line(f"run {run} cancelled")
    return EXIT_INTERRUPTED


def _outcome(renderer: EventRenderer, state: _State, as_json: bool) -> int:
    if as_json:
        print(json.dumps(_summary(renderer), ensure_ascii=False))
    elif renderer.interrupt is not None:
        print(paused_hint(renderer.interrupt), file=sys.stderr)
    if state.presses:
        return EXIT_INTERRUPTED
    if renderer.interrupt is not None:
        return EXIT_PAUSED
    return EXIT_OK if renderer.final is not None else EXIT_RUN_FAILED


def _summary(renderer: EventRenderer) -> dict[str, Any]:
    out: dict[str, Any] = {"thread_id": renderer.thread_id, "run_id": renderer.run_id}
    if renderer.final is not None:
        f = renderer.final
        out |= {"status": "completed", "reply": f.reply, "stop_reason": f.stop_reason}
        out |= {"structured_output": f.structured_output, "tools_used": list(f.tools_used)}
    elif renderer.interrupt is not None:
        pending = [
            {"tool_call_id": c.tool_call_id, "name": c.name, "arguments": c.arguments}
            for c in renderer.interrupt.pending
        ]
        out |= {"status": "paused", "pending": pending}
    elif renderer.error is not None:
        out |= {"status": "failed", "error": {"code": renderer.error.code, "message": renderer.error.message}}
    return out


async def _decide(call: PendingCall, ask_line: Prompt) -> ToolDecision:
    """Ask y / n / e for one pending call until the answer is usable."""
    while True:
        answer = (await ask_line(f"run {call.name}({call.arguments_json})? [y]es / [n]o / [e]dit: ")).strip()
        if answer.lower() in ("y", "yes"):
            return approve(call)
        if answer.lower() in ("n", "no"):
            return reject(call, (await ask_line("reason (optional): ")).strip())
        if answer.lower() in ("e", "edit"):
            text = (await ask_line("arguments as JSON: ")).strip()
            try:
                if not isinstance(json.loads(text), dict):
                    raise ValueError("not a JSON object")
            except ValueError as exc:
                print(f"not usable: {exc}")
                continue
            return edit(call, text)


async def _read_line(text: str) -> str:
    """Print `text` and read one line from stdin without blocking the loop (Ctrl-C stays live)."""
    sys.stdout.write(text)
    sys.stdout.flush()
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()
    fd = sys.stdin.fileno()

    def readable() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(fd, readable)
    try:
        await ready
    finally:
        loop.remove_reader(fd)
    line = sys.stdin.readline()
    if not line:
        raise EOFError("stdin closed while waiting for a decision")
    return line
