"""The loop's state folding, routing and request validation, without any network."""

from __future__ import annotations

import pytest

from agentloop.kernel.errors import InvalidArgument
from agentloop.kernel.settings import GatewaySettings
from agentloop.kernel.wellknown import duration
from agentloop.v1 import agent_pb2, common_pb2
from gateway.journal.convert import metadata_of
from gateway.journal.state import RunConfig, RunState, Update
from gateway.loop.graph import EDGES, END, NODES, START, route_after_agent
from gateway.runs.options import new_turn_messages, resolved_options, run_config


def _state() -> RunState:
    return RunState(run_id="r", thread_id="t", user_id="u", config=RunConfig(system_prompt="s", max_steps=3))


def _assistant_calling(*names: str) -> common_pb2.Message:
    return common_pb2.Message(
        role=common_pb2.ROLE_ASSISTANT,
        tool_calls=[
            common_pb2.ToolCall(id=f"c{i}", name=n, arguments_json="{}") for i, n in enumerate(names)
        ],
    )


def test_apply_appends_histories_and_counts_tools_once_in_first_use_order() -> None:
    state = _state()
    calls = list(_assistant_calling("b", "a", "b").tool_calls)
    state.apply(Update(messages=[_assistant_calling("b", "a", "b")], llm_calls=1))
    state.apply(Update(tool_calls=calls, steps=1, usage=common_pb2.Usage(prompt_tokens=3, total_tokens=3)))
    state.apply(Update(usage=common_pb2.Usage(prompt_tokens=2, total_tokens=2)))
    assert state.tools_used == ["b", "a"]
    assert state.current_step == 1
    assert state.llm_calls == 1
    assert state.usage.prompt_tokens == 5
    md = metadata_of(state)
    assert (md.steps_taken, md.tool_calls, list(md.tools_used)) == (1, 3, ["b", "a"])


def test_apply_sums_every_billed_figure_of_usage() -> None:
    state = _state()
    for cached, reasoning in ((320, 39), (128, 0)):
        usage = common_pb2.Usage(prompt_tokens=400, cached_prompt_tokens=cached, reasoning_tokens=reasoning)
        state.apply(Update(usage=usage, llm_calls=1))
    assert (state.usage.cached_prompt_tokens, state.usage.reasoning_tokens) == (448, 39)
    assert metadata_of(state).usage.cached_prompt_tokens == 448


def test_routing_follows_stop_then_tool_calls() -> None:
    state = _state()
    state.apply(Update(messages=[common_pb2.Message(role=common_pb2.ROLE_ASSISTANT, content="hi")]))
    assert route_after_agent(state) == "finalize"
    state.apply(Update(messages=[_assistant_calling("x")]))
    assert route_after_agent(state) == "tools"
    state.apply(Update(stop=True, stop_reason="max_steps"))
    assert route_after_agent(state) == "finalize"


def test_graph_is_closed_every_edge_leads_to_a_node_or_end() -> None:
    assert START in NODES
    assert set(EDGES) == set(NODES)
    state = _state()
    for node, router in EDGES.items():
        target = router(state)
        assert target == END or target in NODES, node


def test_run_config_fills_defaults_and_its_stored_form_ignores_another_gateways_defaults() -> None:
    settings = GatewaySettings(max_steps=7, system_prompt="default prompt")
    cfg = run_config(agent_pb2.RunOptions(), settings)
    assert (cfg.max_steps, cfg.system_prompt, cfg.stream_mode) == (
        7,
        "default prompt",
        agent_pb2.STREAM_MODE_FINAL_ONLY,
    )
    stored = resolved_options(agent_pb2.RunOptions(), cfg)
    other = GatewaySettings(max_steps=50, system_prompt="other prompt", context_budget_tokens=999)
    assert run_config(stored, other) == cfg


@pytest.mark.parametrize(
    ("options", "field"),
    [
        (agent_pb2.RunOptions(max_steps=-1), "options.max_steps"),
        (agent_pb2.RunOptions(max_steps=1001), "options.max_steps"),
        (agent_pb2.RunOptions(tool_timeout=duration(-0.5)), "options.tool_timeout"),
        (agent_pb2.RunOptions(tool_timeout=duration(3601)), "options.tool_timeout"),
        (agent_pb2.RunOptions(temperature=2.5), "options.temperature"),
        (agent_pb2.RunOptions(tools=["calculator", ""]), "options.tools[1]"),
    ],
)
def test_run_config_rejects_bad_options(options: agent_pb2.RunOptions, field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        run_config(options, GatewaySettings())
    assert info.value.field == field


def test_new_turn_orders_history_then_question() -> None:
    history = [
        common_pb2.Message(role=common_pb2.ROLE_USER, content="earlier"),
        _assistant_calling("calc"),
        common_pb2.Message(role=common_pb2.ROLE_TOOL, tool_call_id="c0", content="1"),
        common_pb2.Message(role=common_pb2.ROLE_ASSISTANT, content="one"),
    ]
    msgs = new_turn_messages(agent_pb2.RunRequest(input="now?", history=history))
    assert [m.role for m in msgs] == [
        common_pb2.ROLE_USER,
        common_pb2.ROLE_ASSISTANT,
        common_pb2.ROLE_TOOL,
        common_pb2.ROLE_ASSISTANT,
        common_pb2.ROLE_USER,
    ]
    assert msgs[0].content == "earlier"
    assert msgs[-1].content == "now?"


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (agent_pb2.RunRequest(input="  "), "input"),
        (agent_pb2.RunRequest(input="q", history=[common_pb2.Message(content="x")]), "history[0].role"),
        (
            agent_pb2.RunRequest(input="q", history=[common_pb2.Message(role=common_pb2.ROLE_SYSTEM)]),
            "history[0].role",
        ),
        (
            agent_pb2.RunRequest(
                input="q", history=[common_pb2.Message(role=common_pb2.ROLE_TOOL, tool_call_id="nope")]
            ),
            "history[0].tool_call_id",
        ),
        (agent_pb2.RunRequest(input="q", history=[_assistant_calling("calc")]), "history"),
        (
            agent_pb2.RunRequest(
                input="q",
                history=[
                    _assistant_calling("calc"),
                    common_pb2.Message(role=common_pb2.ROLE_USER, content="x"),
                ],
            ),
            "history[1]",
        ),
        (
            agent_pb2.RunRequest(
                input="q",
                history=[common_pb2.Message(role=common_pb2.ROLE_ASSISTANT, provider_fields_json="[1]")],
            ),
            "history[0].provider_fields_json",
        ),
        (
            agent_pb2.RunRequest(
                input="q",
                history=[
                    common_pb2.Message(
                        role=common_pb2.ROLE_ASSISTANT,
                        tool_calls=[common_pb2.ToolCall(id="c", name="f", provider_fields_json="{")],
                    ),
                    common_pb2.Message(role=common_pb2.ROLE_TOOL, tool_call_id="c"),
                ],
            ),
            "history[0].tool_calls[0].provider_fields_json",
        ),
    ],
)
def test_new_turn_rejects_bad_history(request_: agent_pb2.RunRequest, field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        new_turn_messages(request_)
    assert info.value.field == field
