"""Loop detection over tool rounds: periods 1 and 2, similarity thresholds, off switch."""

from __future__ import annotations

import json

from agentloop.v1 import common_pb2
from gateway.loops import LoopSettings, canonical_args, detect_loop, rounds_of, similarity


def convo(*rounds: list[tuple[str, dict[str, object], str]]) -> list[common_pb2.Message]:
    msgs = [common_pb2.Message(role=common_pb2.ROLE_USER, content="q")]
    for r, calls in enumerate(rounds):
        msgs.append(
            common_pb2.Message(
                role=common_pb2.ROLE_ASSISTANT,
                tool_calls=[
                    common_pb2.ToolCall(id=f"c{r}_{i}", name=name, arguments_json=json.dumps(args))
                    for i, (name, args, _) in enumerate(calls)
                ],
            )
        )
        for i, (_, _, result) in enumerate(calls):
            msgs.append(
                common_pb2.Message(role=common_pb2.ROLE_TOOL, tool_call_id=f"c{r}_{i}", content=result)
            )
    return msgs


S = LoopSettings()
SEARCH = ("search", {"q": "weather in Paris"}, "sunny, 21C")
SEARCH_AGAIN = ("search", {"q": "weather in Paris "}, "sunny, 21C")
LOOKUP = ("lookup", {"id": 7}, "row 7: Alice")


def test_same_call_twice_in_a_row_is_a_loop_of_period_one() -> None:
    assert detect_loop(rounds_of(convo([SEARCH], [SEARCH_AGAIN])), S) == 1


def test_different_results_are_progress_not_a_loop() -> None:
    other = ("search", {"q": "weather in Paris"}, "rain expected tomorrow, 14C, wind from the west")
    assert detect_loop(rounds_of(convo([SEARCH], [other])), S) == 0


def test_different_arguments_are_progress() -> None:
    other = ("search", {"q": "population of Lyon"}, "sunny, 21C")
    assert detect_loop(rounds_of(convo([SEARCH], [other])), S) == 0


def test_cycle_of_two_is_caught() -> None:
    rounds = rounds_of(convo([SEARCH], [LOOKUP], [SEARCH], [LOOKUP]))
    assert detect_loop(rounds, S) == 2
    assert detect_loop(rounds, LoopSettings(max_period=1)) == 0
    assert detect_loop(rounds[:3], S) == 0


def test_parallel_rounds_compare_as_multisets() -> None:
    assert detect_loop(rounds_of(convo([SEARCH, LOOKUP], [LOOKUP, SEARCH])), S) == 1


def test_thresholds_and_off_switch() -> None:
    near = ("search", {"q": "weather in Paris"}, "sunny, 22C")
    rounds = rounds_of(convo([SEARCH], [near]))
    assert detect_loop(rounds, S) == 1
    assert detect_loop(rounds, LoopSettings(result_similarity=1.0)) == 0
    assert detect_loop(rounds, LoopSettings(enabled=False)) == 0


def test_canonical_args_ignore_key_order_and_keep_raw_text() -> None:
    assert canonical_args('{"b": 1, "a": 2}') == canonical_args('{"a": 2, "b": 1}')
    assert canonical_args("not json") == "not json"
    assert similarity("abc", "abc") == 1.0
    assert similarity("abc", "xyz") == 0.0
