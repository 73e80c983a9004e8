"""Any run state survives its checkpoint: `restore(to_record(state))` gives the same state back.

The record is fixed-size, so `restore` rebuilds the tool-call and result
histories from the thread and the stored results; the generated states are
the ones a run can be in (rounds of calls answered by tool messages, maybe a
round still pending with some results already recorded). The resolved
settings get the same treatment through `resolved_options`.
"""

from __future__ import annotations

import dataclasses

from google.protobuf import duration_pb2
from hypothesis import given, settings
from hypothesis import strategies as st

from agentloop.internal.v1 import checkpoint_pb2
from agentloop.kernel.settings import MIN_CONTEXT_BUDGET_TOKENS, GatewaySettings
from agentloop.v1 import agent_pb2, common_pb2
from gateway.journal.convert import metadata_of, restore, to_record
from gateway.journal.state import RunConfig, RunFailure, RunState, StopReason
from gateway.policies.context import Calibration
from gateway.runs.options import resolved_options, run_config

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20)
NAMES = st.sampled_from(["search", "fetch", "calc", "write"])
COUNT = st.integers(min_value=0, max_value=10_000)


# Stop reasons are a closed set on the wire (agentloop.v1.StopReason) and every one of them is
# a StopReason of the state (a stored checkpoint names one by its value); None is "not stopped".
STOP_REASONS = st.sampled_from(
    [
        None,
        *(StopReason(name.removeprefix("STOP_REASON_").lower()) for name in agent_pb2.StopReason.keys()[1:]),
    ]
)


@st.composite
def rounds(
    draw: st.DrawFn, prefix: str
) -> tuple[list[common_pb2.Message], list[common_pb2.ToolCall], list[common_pb2.ToolResult]]:
    """One finished tool round: the assistant's calls, their results (completion order), the tool messages."""
    n = draw(st.integers(min_value=1, max_value=3))
    calls = [
        common_pb2.ToolCall(id=f"{prefix}-{i}", name=draw(NAMES), arguments_json=draw(TEXT)) for i in range(n)
    ]
    results = [
        common_pb2.ToolResult(
            tool_call_id=c.id, name=c.name, content=draw(TEXT), is_error=draw(st.booleans())
        )
        for c in calls
    ]
    results = draw(st.permutations(results))
    assistant = common_pb2.Message(role=common_pb2.ROLE_ASSISTANT, content=draw(TEXT), tool_calls=calls)
    answers = [
        common_pb2.Message(role=common_pb2.ROLE_TOOL, tool_call_id=c.id, name=c.name, content=draw(TEXT))
        for c in calls
    ]
    return [assistant, *answers], calls, list(results)


@st.composite
def decisions(draw: st.DrawFn) -> dict[str, agent_pb2.ApprovalDecision]:
    ids = draw(st.lists(st.sampled_from(["p-0", "p-1", "p-2"]), unique=True, max_size=3))
    return {
        call_id: agent_pb2.ApprovalDecision(
            tool_call_id=call_id,
            verdict=draw(st.sampled_from(list(agent_pb2.ApprovalDecision.Verdict.values())[1:])),
            arguments_json=draw(TEXT),
            reason=draw(TEXT),
        )
        for call_id in ids
    }


@st.composite
def run_states(draw: st.DrawFn) -> tuple[RunState, dict[str, common_pb2.ToolResult]]:
    """A state a run can be in, with the tool results its store holds."""
    config = RunConfig(system_prompt=draw(TEXT), max_steps=draw(st.integers(1, 1000)))
    earlier = [
        common_pb2.Message(role=common_pb2.ROLE_USER, content=draw(TEXT))
        for _ in range(draw(st.integers(0, 2)))
    ]
    messages = [common_pb2.Message(role=common_pb2.ROLE_SYSTEM, content=config.system_prompt), *earlier]
    state = RunState(run_id="r", thread_id="t", user_id=draw(TEXT), config=config)
    state.run_message_start = len(messages)
    messages.append(common_pb2.Message(role=common_pb2.ROLE_USER, content=draw(TEXT)))
    for index in range(draw(st.integers(0, 3))):
        added, calls, results = draw(rounds(f"c{index}"))
        messages.extend(added)
        state.tool_call_history.extend(calls)
        state.tool_result_history.extend(results)
        state.tools_used.extend(dict.fromkeys(c.name for c in calls if c.name not in state.tools_used))
    recorded = {r.tool_call_id: r for r in state.tool_result_history}
    if draw(st.booleans()):  # a round still pending, some of its calls already finished
        pending, calls, results = draw(rounds("p"))
        messages.append(pending[0])
        recorded.update({r.tool_call_id: r for r in results[: draw(st.integers(0, len(results)))]})
    state.messages = messages
    state.current_step = len(state.tool_call_history) and draw(COUNT)
    state.llm_calls = draw(COUNT)
    state.usage = common_pb2.Usage(
        prompt_tokens=draw(COUNT), completion_tokens=draw(COUNT), total_tokens=draw(COUNT)
    )
    state.stop, state.stop_reason, state.final_reply = draw(st.booleans()), draw(STOP_REASONS), draw(TEXT)
    if draw(st.booleans()):
        state.error = RunFailure(draw(st.sampled_from(["INTERNAL", "UNAVAILABLE"])), draw(TEXT), draw(TEXT))
    state.suggested_next_step, state.hint, state.structured_output_json = draw(TEXT), draw(TEXT), draw(TEXT)
    state.awaiting_approval = draw(st.booleans())
    state.approvals = draw(decisions())
    state.recalled = draw(st.none() | st.lists(TEXT, max_size=4))
    state.calibration = Calibration(draw(COUNT), draw(COUNT))
    models = st.sampled_from(["primary", "backup", "local"])
    state.models_used = draw(st.lists(models, unique=True, max_size=3))
    return state, recorded


@settings(max_examples=200, deadline=None)
@given(run_states(), st.integers(0, 1 << 40))
def test_any_state_round_trips_through_its_stored_record(
    case: tuple[RunState, dict[str, common_pb2.ToolResult]], sequence: int
) -> None:
    state, recorded = case
    stored = to_record(state, "tools", "agent", sequence).SerializeToString()
    record = checkpoint_pb2.CheckpointRecord.FromString(stored)
    rebuilt = RunState(
        run_id=state.run_id,
        thread_id=state.thread_id,
        user_id=state.user_id,
        config=state.config,
        messages=list(state.messages),
    )
    restore(rebuilt, record, recorded)
    assert rebuilt == state
    assert metadata_of(rebuilt) == metadata_of(state)
    assert (record.node, record.next_node, record.last_sequence) == ("tools", "agent", sequence)


LOOP = st.builds(agent_pb2.LoopDetection, disabled=st.booleans(), max_period=st.integers(0, 5))
OPTIONS = st.builds(
    agent_pb2.RunOptions,
    system_prompt=TEXT,
    max_steps=st.integers(0, 1000),
    stream_mode=st.sampled_from(list(agent_pb2.StreamMode.values())),
    model=TEXT.filter(bool) | st.just(""),
    tools=st.lists(NAMES, max_size=2),
    tool_timeout=st.builds(duration_pb2.Duration, seconds=st.integers(0, 3600)),
    loop_detection=LOOP,
    serial_tools=st.booleans(),
    require_approval=st.lists(NAMES, max_size=2),
    disable_memory=st.booleans(),
    disable_flow_guidance=st.booleans(),
    context_budget_tokens=st.just(0) | st.integers(MIN_CONTEXT_BUDGET_TOKENS, 10_000_000),
    session_memory=st.booleans(),
)


@settings(max_examples=200, deadline=None)
@given(OPTIONS, st.integers(1, 1000), st.integers(1, 1000), TEXT, st.integers(1, 10_000_000))
def test_resolved_settings_read_the_same_on_a_differently_configured_gateway(
    options: agent_pb2.RunOptions, steps_here: int, steps_there: int, prompt_there: str, budget_there: int
) -> None:
    here = GatewaySettings(max_steps=steps_here)
    there = dataclasses.replace(
        here, max_steps=steps_there, system_prompt=prompt_there, context_budget_tokens=budget_there
    )
    config = run_config(options, here)
    stored = agent_pb2.RunOptions.FromString(resolved_options(options, config).SerializeToString())
    assert run_config(stored, there) == config
