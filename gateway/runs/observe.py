"""The span and the run metrics around one run executing in this gateway.

The run span ("invoke_agent agentloop", GenAI conventions) is the parent of
the node spans, and through them of every Reasoner and ToolService call the
run makes: one trace per run. It names the run, its thread and its user (ids
only: never the input, the conversation or a credential).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from opentelemetry import trace
from opentelemetry.util.types import AttributeValue

from agentloop.kernel.telemetry import Telemetry
from gateway.journal.state import RunState, StopReason

END = ""


def run_outcome(state: RunState) -> str:
    """How the run left this process: completed, failed, cancelled, paused or interrupted.

    "interrupted" means this process stopped executing it before it ended (shut
    down, lease lost, database down): another gateway, or this one later,
    resumes it from its last checkpoint.
    """
    if state.error is not None:
        return "interrupted" if state.error.interrupted else "failed"
    if state.awaiting_approval:
        return "paused"
    if not state.stop or not state.final_reply:
        return "interrupted"
    if state.stop_reason == StopReason.CANCELLED:
        return "cancelled"
    return "completed"


@contextlib.contextmanager
def traced_run(telemetry: Telemetry, state: RunState, start: str) -> Iterator[trace.Span]:
    """Span, agentloop.runs.active and (at the end) agentloop.runs{status} around one execution."""
    attributes: dict[str, AttributeValue] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "agentloop",
        "gen_ai.conversation.id": state.thread_id,
        "agentloop.run_id": state.run_id,
        "agentloop.thread_id": state.thread_id,
        "agentloop.start_node": start or "END",
    }
    if state.user_id:
        attributes["agentloop.user_id"] = state.user_id
    telemetry.runs_active.add(1)
    outcome = "interrupted"
    try:
        with telemetry.span("invoke_agent agentloop", attributes=attributes) as span:
            try:
                yield span
                outcome = run_outcome(state)
            finally:
                span.set_attributes(
                    {
                        "agentloop.run.status": outcome,
                        "agentloop.stop_reason": state.stop_reason or "",
                        "agentloop.steps": state.current_step,
                        "agentloop.llm_calls": state.llm_calls,
                        "gen_ai.usage.input_tokens": state.usage.prompt_tokens,
                        "gen_ai.usage.output_tokens": state.usage.completion_tokens,
                    }
                )
                if state.error is not None:
                    failure = state.error
                    span.set_attribute("error.type", failure.code)
                    span.set_status(trace.Status(trace.StatusCode.ERROR, f"{failure.code} in {failure.node}"))
    finally:
        telemetry.runs_active.add(-1)
        if start != END:  # a run adopted after its last node only gets its status written
            telemetry.runs.add(1, {"status": outcome})
