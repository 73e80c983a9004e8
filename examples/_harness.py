"""What every example shares: finding the gateway, `--self-contained`, and printing events.

An example is an async function that talks to a gateway through an `agent_pb2_grpc.AgentStub`
(the wire contract the feature pages describe) or `agentloop.client`. `run_example` connects it
to the gateway at AGENTLOOP_GATEWAY_ADDR (default 127.0.0.1:50050), or, with `--self-contained`,
first starts the whole stack in this process (`agentloop.testing`: scripted model, reasoner, tool
service with the tools of example_tools.py and caller_tools.py, gateway on a throwaway SQLite
file) with the example's script, so the feature happens every time, then stops it.
`--print-script` prints that script as JSON, for `agentloop dev --script` (a running stack that
behaves like the self-contained one). Thread and user ids get a suffix unique to each run
(`unique`), so an example can run any number of times against the same gateway.
"""

from __future__ import annotations

import os

# gRPC's C core logs INFO lines on stderr (a GOAWAY while the in-process stack stops): errors only.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

import argparse
import asyncio
import json
import logging
import sys
import tempfile
import uuid
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
from google.rpc import code_pb2

from agentloop.client import AgentClient, struct_to_dict
from agentloop.testing import Script, ScriptedModelServer, start_stack
from agentloop.v1 import agent_pb2, agent_pb2_grpc, common_pb2

DEFAULT_GATEWAY_ADDR = "127.0.0.1:50050"
TOOL_MODULES = ("example_tools", "caller_tools")
"""The examples' tool modules (next to this file): what --self-contained serves."""
RUN_TAG = uuid.uuid4().hex[:8]


def unique(name: str) -> str:
    """`name` with a suffix of this run, so thread and user ids never collide with an earlier run."""
    return f"{name}-{RUN_TAG}"


@dataclass
class Session:
    """What an example gets: a stub on the gateway, and the scripted model when self-contained."""

    agent: agent_pb2_grpc.AgentStub
    client: AgentClient
    model: ScriptedModelServer | None = None
    """Only with --self-contained: lets an example show what the model was sent."""


Example = Callable[[Session], Awaitable[None]]
RpcError = grpc.aio.AioRpcError
"""What a failed call raises: `.code()` is a grpc.StatusCode, `.details()` the message."""


def run_example(
    example: Example,
    script: Script,
    *,
    tools: Sequence[Callable[..., Any]] = (),
    gateway: dict[str, Any] | None = None,
) -> None:
    """Parse the command line and run `example` against a gateway (or a stack started here)."""
    parser = argparse.ArgumentParser(description=(sys.modules["__main__"].__doc__ or "").split("\n")[0])
    parser.add_argument(
        "--self-contained",
        action="store_true",
        help="start the scripted model, reasoner, tools and gateway in this process first",
    )
    parser.add_argument(
        "--print-script", action="store_true", help="print the scripted model's script (for agentloop dev)"
    )
    args = parser.parse_args()
    if args.print_script:
        print(json.dumps(script.to_dict(), indent=2))
        return
    if args.self_contained:
        asyncio.run(_self_contained(example, script, tools, gateway or {}))
        return
    addr = os.environ.get("AGENTLOOP_GATEWAY_ADDR", DEFAULT_GATEWAY_ADDR)
    try:
        asyncio.run(_connect(example, addr))
    except grpc.aio.AioRpcError as exc:
        if exc.code() != grpc.StatusCode.UNAVAILABLE:
            raise
        sys.exit(f"no gateway answers at {addr} ({exc.details()}); start one, or use --self-contained")


async def _connect(example: Example, addr: str, model: ScriptedModelServer | None = None) -> None:
    async with grpc.aio.insecure_channel(addr) as channel, AgentClient(addr, token="") as client:
        await example(Session(agent_pb2_grpc.AgentStub(channel), client, model))


async def _self_contained(
    example: Example, script: Script, tools: Sequence[Callable[..., Any]], gateway: dict[str, Any]
) -> None:
    # The services' own logs (a tool's traceback, say) would mix with the example's output.
    logging.getLogger().addHandler(logging.NullHandler())
    with tempfile.TemporaryDirectory(prefix="agentloop-example-") as tmp:
        stack = await start_stack(
            script,
            tools=tools,
            tool_modules=TOOL_MODULES,
            database_url=f"sqlite+aiosqlite:///{tmp}/gateway.db",
            gateway_overrides=gateway,
        )
        try:
            await _connect(example, f"127.0.0.1:{stack.gateway.port}", stack.model)
        finally:
            await stack.close()


# --- reading and printing events ------------------------------------------------------------


async def collect(stream: AsyncIterable[Any]) -> list[agent_pb2.RunEvent]:
    """Every event of a Run, Resume or Watch stream."""
    return [response.event async for response in stream]


def describe(event: agent_pb2.RunEvent) -> str | None:
    """One line for the events the examples care about; None for node and token events."""
    kind = event.WhichOneof("event")
    if kind == "decision":
        kind_name = agent_pb2.DecisionKind.Name(event.decision.kind).removeprefix("DECISION_KIND_").lower()
        return f"decision    {kind_name}: {event.decision.detail}"
    if kind == "interrupt":
        calls = ", ".join(f"{c.name}({c.arguments_json}) id={c.id}" for c in event.interrupt.pending)
        return f"interrupt   {event.interrupt.reason}: {calls}"
    if kind == "tool_start":
        return f"tool_start  {event.tool_start.name}({event.tool_start.arguments_json})"
    if kind == "tool_end":
        result = event.tool_end.result
        flag = ""
        if result.is_error:
            flag = f" [{common_pb2.ToolErrorKind.Name(result.error_kind).removeprefix('TOOL_ERROR_KIND_')}]"
        return f"tool_end    {event.tool_end.name} ->{flag} {result.content}"
    if kind == "final":
        meta = event.final.metadata
        stop = agent_pb2.StopReason.Name(meta.stop_reason).removeprefix("STOP_REASON_").lower()
        line = (
            f"final       {event.final.final_reply!r}\n"
            f"stop_reason={stop} steps_taken={meta.steps_taken} llm_calls={meta.llm_calls}"
        )
        if event.final.HasField("structured_output"):
            # A Struct is a map: its keys arrive in no set order, so print them sorted.
            answer = dict(sorted(struct_to_dict(event.final.structured_output).items()))
            line += f"\nstructured_output={compact(answer)}"
        return line
    if kind == "error":
        return (
            f"error       {code_pb2.Code.Name(event.error.code)} in {event.error.node}: {event.error.message}"
        )
    return None


def show(events: Iterable[agent_pb2.RunEvent], only: Iterable[str] = ()) -> None:
    """Print the described events (only those whose oneof name is in `only`, when given)."""
    wanted = set(only)
    for event in events:
        if wanted and event.WhichOneof("event") not in wanted:
            continue
        line = describe(event)
        if line is not None:
            print("  " + line.replace("\n", "\n" + " " * 14))


def system_messages_sent(model: ScriptedModelServer, call: int = -1) -> list[str]:
    """The system messages of one request the scripted model received (the newest by default)."""
    messages = model.requests[call]["messages"]
    return [str(m["content"]) for m in messages if m["role"] == "system"]


def compact(value: object) -> str:
    """JSON on one line, for printing."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
