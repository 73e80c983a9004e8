"""The loop's graph, in one place.

    init_state → agent ─┬─ stop? ────────────→ finalize → END
                        ├─ tool_calls? → tools → agent
                        └─ otherwise ─────────→ finalize

Nodes (nodes.py) compute updates; this module decides the order. The runner
applies each update, emits node_start/node_end around every node, logs every
routing decision and turns a failed dependency into one error event.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from agentloop.errors import AgentloopError
from agentloop.v1 import agent_pb2
from gateway import nodes
from gateway.nodes import RunContext
from gateway.state import STOP_ERROR, RunState, Update

log = logging.getLogger(__name__)

START = "init_state"
END = "__end__"

Node = Callable[[RunState, RunContext], Awaitable[Update]]
Router = Callable[[RunState], str]


def route_after_agent(state: RunState) -> str:
    """seed 000's conditional edge: stop flag → finalize; tool calls → tools; else finalize."""
    if state.stop:
        return "finalize"
    if state.pending_tool_calls():
        return "tools"
    return "finalize"


NODES: dict[str, Node] = {
    "init_state": nodes.init_state,
    "agent": nodes.agent,
    "tools": nodes.tools,
    "finalize": nodes.finalize,
}

EDGES: dict[str, Router] = {
    "init_state": lambda _: "agent",
    "agent": route_after_agent,
    "tools": lambda _: "agent",
    "finalize": lambda _: END,
}


def final_event(state: RunState, ctx: RunContext) -> agent_pb2.RunFinal:
    """The outcome of a finished run; the conversation without the system prompt."""
    return agent_pb2.RunFinal(
        final_reply=state.final_reply,
        metadata=state.metadata(),
        messages=state.messages[1:],
    )


async def run_graph(state: RunState, ctx: RunContext) -> RunState:
    """Drive the run from START to END; returns the final state (stop_reason "error" on failure)."""
    node = START
    while node != END:
        ctx.sink.node_start(node, state.current_step)
        started = time.perf_counter()
        try:
            update = await NODES[node](state, ctx)
        except AgentloopError as exc:
            return _fail(state, ctx, node, exc.code.name, exc.message)
        except Exception as exc:
            log.exception("run %s: node %s failed", state.run_id, node)
            return _fail(state, ctx, node, "INTERNAL", f"{type(exc).__name__}: {exc}")
        state.apply(update)
        ctx.sink.node_end(node, state.current_step, (time.perf_counter() - started) * 1000)
        following = EDGES[node](state)
        log.debug("run %s: %s -> %s (step %d)", state.run_id, node, following, state.current_step)
        node = following
    ctx.sink.final(final_event(state, ctx))
    return state


def _fail(state: RunState, ctx: RunContext, node: str, code: str, message: str) -> RunState:
    log.warning("run %s failed in %s: %s %s", state.run_id, node, code, message)
    state.apply(Update(stop=True, stop_reason=STOP_ERROR, final_reply=""))
    ctx.sink.error(code, message, node)
    state.error = (code, message, node)
    return state
