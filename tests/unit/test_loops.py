"""Loop detection by meaning: canonical arguments, unchanged results, cycles, declared budgets, the corpus."""

from __future__ import annotations

import json

import pytest

from agentloop.kernel.loop_policy import LoopPolicy, parse_policies, policy_of_spec
from agentloop.kernel.setting_errors import SettingError
from agentloop.kernel.settings import GatewaySettings
from agentloop.v1 import agent_pb2, common_pb2
from bench.loop_detection import ALLOWED_REPEATS, load_corpus, run_trace, summarize
from gateway.policies.loop_detection import LoopSettings, canonical, describe, detect_loop, rounds_of
from tool_svc import ToolRegistry, tool

CallSpec = tuple[str, object, str]


def convo(*rounds: list[CallSpec]) -> list[common_pb2.Message]:
    """A conversation of tool rounds; a str argument is sent verbatim, anything else as JSON."""
    msgs = [common_pb2.Message(role=common_pb2.ROLE_USER, content="q")]
    for r, calls in enumerate(rounds):
        msgs.append(
            common_pb2.Message(
                role=common_pb2.ROLE_ASSISTANT,
                tool_calls=[
                    common_pb2.ToolCall(
                        id=f"c{r}_{i}",
                        name=name,
                        arguments_json=args if isinstance(args, str) else json.dumps(args),
                    )
                    for i, (name, args, _) in enumerate(calls)
                ],
            )
        )
        for i, (_, _, result) in enumerate(calls):
            msgs.append(
                common_pb2.Message(role=common_pb2.ROLE_TOOL, tool_call_id=f"c{r}_{i}", content=result)
            )
    return msgs


def first_stop(
    rounds: list[list[CallSpec]],
    settings: LoopSettings | None = None,
    policies: dict[str, LoopPolicy] | None = None,
) -> int | None:
    """The round after which a run would be stopped, checking after every round as the gateway does."""
    specs = {
        name: common_pb2.ToolSpec(name=name, loop_policy=p.to_proto()) for name, p in (policies or {}).items()
    }
    for n in range(1, len(rounds) + 1):
        if detect_loop(rounds_of(convo(*rounds[:n])), settings or LoopSettings(), specs) is not None:
            return n
    return None


SEARCH: CallSpec = ("search", {"q": "weather in Paris"}, "sunny, 21C")
LOOKUP: CallSpec = ("lookup", {"id": 7}, "row 7: Alice")
PENDING: CallSpec = ("poll", {"job": "j1"}, '{"state": "pending"}')


def test_distinct_keys_are_progress_however_alike_they_look() -> None:
    rounds = [[("lookup", {"key": f"{i}-0"}, f"value-for-{i}-0")] for i in range(10)]
    assert first_stop(rounds) is None


def test_same_call_and_result_twice_is_a_loop_even_reformatted() -> None:
    assert first_stop([[SEARCH], [SEARCH]]) == 2
    reformatted: CallSpec = ("search", '{ "q" :  " weather  in Paris" }', "sunny, 21C")
    assert first_stop([[SEARCH], [reformatted]]) == 2
    assert first_stop([[("add", {"a": 1, "b": 2}, "3")], [("add", '{"b": 2.0, "a": 1}', "3")]]) == 2


def test_a_new_result_or_a_different_error_is_progress() -> None:
    assert first_stop([[SEARCH], [("search", {"q": "weather in Paris"}, "sunny, 22C")]]) is None
    errors = [[("deploy", {}, f"ERROR (tool_failed): {e}")] for e in ("no config", "port in use")]
    assert first_stop(errors) is None
    assert first_stop([errors[0], errors[0]]) == 2


def test_cycles_of_two_and_three_rounds() -> None:
    other: CallSpec = ("list_dir", {"path": "/"}, '["a"]')
    assert first_stop([[SEARCH], [LOOKUP]] * 3) == 4
    assert first_stop([[SEARCH], [LOOKUP]] * 3, LoopSettings(max_period=1)) is None
    assert first_stop([[SEARCH], [LOOKUP], [other]] * 3) == 6
    assert first_stop([[SEARCH], [LOOKUP], [other]] * 3, LoopSettings(max_period=2)) is None


def test_parallel_rounds_compare_as_multisets() -> None:
    assert first_stop([[SEARCH, LOOKUP], [LOOKUP, SEARCH]]) == 2
    loop = detect_loop(rounds_of(convo([SEARCH, LOOKUP], [LOOKUP, SEARCH])), LoopSettings())
    assert loop is not None
    assert describe(loop).endswith("round 2 repeats round 1 (lookup, search: same arguments, same results)")
    assert first_stop([[SEARCH, LOOKUP], [LOOKUP]]) is None


def test_declared_poll_budget_allows_repeats_and_a_change_resets_it() -> None:
    policies = {"poll": LoopPolicy(repeat_budget=2)}
    assert first_stop([[PENDING]] * 6, policies=policies) == 4
    assert first_stop([[PENDING]] * 6) == 2
    running: CallSpec = ("poll", {"job": "j1"}, '{"state": "running"}')
    assert first_stop([[PENDING]] * 3 + [[running]] * 3, policies=policies) is None


def test_ignored_arguments_and_volatile_result_fields() -> None:
    a: CallSpec = ("fetch", {"url": "/x", "reason": "first"}, '{"items": [1], "meta": {"request_id": "r1"}}')
    b: CallSpec = ("fetch", {"url": "/x", "reason": "again"}, '{"items": [1], "meta": {"request_id": "r2"}}')
    assert first_stop([[a], [b]]) is None
    declared = {"fetch": LoopPolicy(ignore_args=("reason",), volatile_result_fields=("meta.request_id",))}
    assert first_stop([[a], [b]], policies=declared) == 2
    c: CallSpec = ("fetch", {"url": "/y", "reason": "again"}, '{"items": [1], "meta": {"request_id": "r3"}}')
    assert first_stop([[a], [c]], policies=declared) is None


def test_gateway_override_replaces_the_declared_policy() -> None:
    settings = LoopSettings(overrides=(("poll", LoopPolicy(repeat_budget=4)),))
    assert first_stop([[PENDING]] * 8, settings, {"poll": LoopPolicy(repeat_budget=1)}) == 6


def test_off_switch_and_deprecated_similarity_fields_are_ignored() -> None:
    assert first_stop([[SEARCH]] * 3, LoopSettings(enabled=False)) is None
    options = agent_pb2.LoopDetection(args_similarity=0.1, result_similarity=0.1)
    assert (
        first_stop([[SEARCH], [("search", {"q": "rain"}, "cloudy")]], LoopSettings.from_proto(options))
        is None
    )


def test_canonical_form() -> None:
    assert canonical('{"b": 1, "a": [2.0, " x  y "]}') == '{"a":[2,"x y"],"b":1}'
    assert canonical('{"items": [{"t": 1, "v": 2}], "t": 3}', ["items.*.t"]) == '{"items":[{"v":2}],"t":3}'
    assert canonical("  plain   text ") == "plain text"


def test_deeply_nested_json_is_compared_as_text_without_recursion_error() -> None:
    deep = '{"a":' * 2000 + "1" + "}" * 2000
    other = '{"a":' * 2000 + "2" + "}" * 2000
    assert canonical(deep) == deep
    error = "ERROR (malformed_arguments): arguments could not be read as JSON"
    assert first_stop([[("add", deep, error)], [("add", deep, error)]]) == 2
    assert first_stop([[("add", deep, error)], [("add", other, error)]]) is None
    assert first_stop([[("echo", {}, deep)], [("echo", {}, deep)]]) == 2


def test_description_names_rounds_tools_and_reason() -> None:
    loop = detect_loop(rounds_of(convo([LOOKUP], [SEARCH], [LOOKUP], [SEARCH])), LoopSettings())
    assert loop is not None
    assert describe(loop) == (
        "the same tool calls repeated in a cycle of 2 rounds (lookup → search), twice with the same results: "
        "rounds 3–4 repeat rounds 1–2 (lookup, search: same arguments, same results)"
    )
    policies = {"poll": LoopPolicy(repeat_budget=2, volatile_result_fields=("checked_at",))}
    specs = {"poll": common_pb2.ToolSpec(name="poll", loop_policy=policies["poll"].to_proto())}
    loop = detect_loop(rounds_of(convo(*[[PENDING]] * 4)), LoopSettings(), specs)
    assert loop is not None
    assert describe(loop) == (
        "the same tool calls repeated 4 times in a row with the same results: rounds 2–4 repeat round 1 "
        "(poll: same arguments, same result, ignoring declared fields checked_at; "
        "at most 2 repeats are expected)"
    )


def test_corpus_meets_the_targets() -> None:
    outcomes = [run_trace(trace) for trace in load_corpus()]
    summary = summarize(outcomes)
    assert summary["progress_traces"] >= 20
    assert summary["loop_traces"] >= 20
    assert summary["false_positives"] == []
    assert summary["loops_missed"] == []
    assert summary["loops_too_late_or_early"] == []
    assert summary["precision"] == 1.0
    assert summary["recall"] == 1.0
    assert summary["max_repeats_past_budget"] <= ALLOWED_REPEATS


def test_loop_policy_is_checked_and_travels_in_the_tool_spec() -> None:
    @tool(loop_policy=LoopPolicy(repeat_budget=5, volatile_result_fields=("checked_at",)))
    def poll_job(job: str) -> str:
        """Poll a job.

        Args:
            job: its id.
        """
        return "pending"

    spec = ToolRegistry([poll_job]).specs()[0]
    assert policy_of_spec(spec) == LoopPolicy(repeat_budget=5, volatile_result_fields=("checked_at",))
    assert policy_of_spec(common_pb2.ToolSpec(name="x")) == LoopPolicy()
    with pytest.raises(ValueError, match="repeat_budget"):
        LoopPolicy(repeat_budget=101)
    with pytest.raises(ValueError, match="dotted path"):
        LoopPolicy(ignore_args=("a..b",))
    with pytest.raises(TypeError, match="LoopPolicy"):
        tool(loop_policy={"repeat_budget": 1})  # type: ignore[arg-type]
    sent = common_pb2.LoopPolicy(ignore_args=["ok", "bad path"], repeat_budget=500)
    assert LoopPolicy.from_proto(sent) == LoopPolicy(ignore_args=("ok",), repeat_budget=100)


def test_policies_from_the_environment() -> None:
    env = {"AGENTLOOP_LOOP_POLICIES": '{"mcp_status": {"repeat_budget": 10, "ignore_args": ["trace_id"]}}'}
    assert GatewaySettings.from_env(env).loop_policies == (
        ("mcp_status", LoopPolicy(repeat_budget=10, ignore_args=("trace_id",))),
    )
    for bad, message in (
        ("[1]", "expected a JSON object"),
        ('{"t": {"budget": 1}}', "AGENTLOOP_LOOP_POLICIES.t.budget: unknown field"),
        ('{"t": {"repeat_budget": -1}}', "repeat_budget"),
        ("[" * 5000, "not valid JSON"),
    ):
        with pytest.raises(SettingError, match=message):
            GatewaySettings.from_env({"AGENTLOOP_LOOP_POLICIES": bad})
    assert parse_policies("", "X") == ()
