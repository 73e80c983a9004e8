"""The loop's graph, in one place.

    init_state → memory_trigger → agent ─┬─ stop? ───────────→ finalize → END
                                         ├─ tool_calls? → tools ─┬─ reply text missing? → agent
                                         │                       ├─ stop? → finalize
                                         │                       ├─ needs approval? → (paused) END
                                         │                       └─ else → agent
                                         ├─ summary made / no valid final_answer yet → agent
                                         └─ otherwise ─────────→ finalize

The tools node (gateway/loop/acting.py) holds seed 001's prepare_tool_input (approval gate, injected
context, hooks) and update_state_after_tool (flow guidance, loop detection)
as its first and last phases, so a step costs two checkpoints, not four.

Nodes (nodes.py) compute updates; this module decides the order. After every
node the runner applies the update, commits a checkpoint (the messages the
node added and the scalar state) and only then starts the next node, so a run
killed anywhere resumes from its last transition (`run_graph(..., start=node)`).
A Cancel seen between nodes routes straight to finalize. A failed dependency
ends the run with one error event.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from agentloop.kernel.errors import AgentloopError
from agentloop.v1 import common_pb2
from gateway.journal.closing import tool_message
from gateway.journal.convert import final_event
from gateway.journal.run_journal import StoreUnavailable, describe_failure
from gateway.journal.state import RunFailure, RunState, StopReason, Update
from gateway.loop import nodes
from gateway.loop.run_context import RunContext
from gateway.store.base import LeaseLost, RunStatus

log = logging.getLogger(__name__)

START = "init_state"
END = ""

Node = Callable[[RunState, RunContext], Awaitable[Update]]
Router = Callable[[RunState], str]


def route_after_agent(state: RunState) -> str:
    """seed 000's conditional edge: stop flag → finalize; tool calls → tools; else finalize."""
    if state.stop:
        return "finalize"
    if state.pending_tool_calls():
        return "tools"
    if nodes.call_model_again(state):
        return "agent"
    return "finalize"


def route_after_tools(state: RunState) -> str:
    """Back to the model; to finalize when the round stopped the run; END while awaiting approval."""
    if state.awaiting_approval:
        return END
    if nodes.wants_reply_text(state):
        return "agent"
    return "finalize" if state.stop else "agent"


NODES: dict[str, Node] = {
    "init_state": nodes.init_state,
    "memory_trigger": nodes.memory_trigger,
    "agent": nodes.agent,
    "tools": nodes.tools,
    "finalize": nodes.finalize,
}

EDGES: dict[str, Router] = {
    "init_state": lambda _: "memory_trigger",
    "memory_trigger": lambda _: "agent",
    "agent": route_after_agent,
    "tools": route_after_tools,
    "finalize": lambda _: END,
}

_FINAL_STATUS: dict[StopReason | None, RunStatus] = {StopReason.CANCELLED: RunStatus.CANCELLED}


async def run_graph(state: RunState, ctx: RunContext, start: str = START) -> RunState:
    """Drive the run from `start` to END; returns the final state (stop_reason "error" on failure).

    LeaseLost propagates (another gateway owns the run now and this one must
    stop touching it), and so does StoreUnavailable (nothing more can be
    recorded; the run will be resumed from its last checkpoint).
    """
    node = start
    while node != END:
        node = _enter(state, ctx, node)
        started = time.perf_counter()
        try:
            with ctx.telemetry.node(node, state.run_id, state.current_step):
                update = await NODES[node](state, ctx)
        except (LeaseLost, StoreUnavailable):
            raise
        except AgentloopError as exc:
            return await _fail(state, ctx, node, exc.code.name, exc.message)
        except Exception as exc:
            log.exception("run %s: node %s failed", state.run_id, node)
            return await _fail(state, ctx, node, "INTERNAL", describe_failure(exc))
        state.apply(update)
        following = EDGES[node](state)
        duration_ms = (time.perf_counter() - started) * 1000
        _log_transition(state, node, following, duration_ms)
        await _commit(state, ctx, node, following, update, duration_ms)
        node = following
    return state


def _enter(state: RunState, ctx: RunContext, node: str) -> str:
    """The node that actually runs next (finalize once Cancel arrived), announced and logged."""
    if ctx.cancel.is_set() and node in ("agent", "tools"):
        log.info("run %s: cancelled before %s", state.run_id, node)
        state.apply(Update(stop=True, stop_reason=StopReason.CANCELLED))
        node = "finalize"
    ctx.sink.node_start(node, state.current_step)
    log.debug(
        "run %s: enter %s (step %d)",
        state.run_id,
        node,
        state.current_step,
        extra={"run_id": state.run_id, "node": node, "step": state.current_step},
    )
    return node


def _log_transition(state: RunState, node: str, following: str, duration_ms: float) -> None:
    """At DEBUG: two records per node at INFO were a tenth of the gateway's CPU per step."""
    if not log.isEnabledFor(logging.DEBUG):
        return
    log.debug(
        "run %s: %s -> %s (step %d)",
        state.run_id,
        node,
        following or "END",
        state.current_step,
        extra={
            "run_id": state.run_id,
            "node": node,
            "next_node": following or "END",
            "step": state.current_step,
            "duration_ms": round(duration_ms, 3),
        },
    )


async def _commit(
    state: RunState, ctx: RunContext, node: str, following: str, update: Update, duration_ms: float
) -> None:
    """Checkpoint the transition out of `node`: paused, ended (with the final event) or going on."""
    if following == END and node == "tools" and state.awaiting_approval:
        # Paused: resumable at this same node once decisions arrive, on any gateway.
        ctx.sink.node_end(node, state.current_step, duration_ms)
        await ctx.journal.checkpoint(state, node, node, update.messages, RunStatus.PAUSED)
    elif following == END:
        ctx.sink.node_end(node, state.current_step, duration_ms)
        ctx.sink.final(final_event(state))
        status = _FINAL_STATUS.get(state.stop_reason, RunStatus.COMPLETED)
        await ctx.journal.checkpoint(state, node, END, update.messages, status)
    else:
        await ctx.journal.checkpoint(state, node, following, update.messages)
        ctx.sink.node_end(node, state.current_step, duration_ms)


async def _fail(state: RunState, ctx: RunContext, node: str, code: str, message: str) -> RunState:
    """End the run with one error event; tool calls left open get error results so the thread stays valid.

    A call that finished but whose result was still waiting for the node's
    checkpoint keeps that result (already announced; this write stores it).
    """
    log.warning("run %s failed in %s: %s %s", state.run_id, node, code, message)
    finished = ctx.journal.carried_results
    closing = [
        finished.get(call.id)
        or common_pb2.ToolResult(
            tool_call_id=call.id,
            name=call.name,
            content=f"The tool call could not run: {message}",
            is_error=True,
            error_kind=common_pb2.TOOL_ERROR_KIND_UNAVAILABLE,
        )
        for call in state.pending_tool_calls()
    ]
    for result in closing:
        await ctx.journal.tool_result(state.run_id, result)
    closing_messages = [tool_message(r) for r in closing]
    state.apply(
        Update(messages=closing_messages, tool_results=closing, stop=True, stop_reason=StopReason.ERROR)
    )
    state.error = RunFailure(code, message, node)
    ctx.sink.error(code, message, node)
    await ctx.journal.checkpoint(state, node, END, closing_messages, RunStatus.FAILED)
    return state
