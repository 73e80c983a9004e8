"""The scripted model's script format and turn selection, without any HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentloop.scripted_model import (
    DEFAULT_FINAL_TEXT,
    DEMO_QUESTION,
    NO_RESULT,
    Fault,
    Latency,
    Recording,
    Scenario,
    Script,
    ScriptedToolCall,
    Turn,
    demo_script,
)
from agentloop.scripted_model.messages import render
from agentloop.scripted_model.wire import Pieces, split_arguments, split_text

FULL_SCRIPT: dict[str, Any] = {
    "scenarios": [
        {
            "name": "weather",
            "match": "weather|forecast",
            "final_text": "No tools, so: {{last_tool}}",
            "turns": [
                {
                    "reasoning": "Need the forecast.",
                    "tool_calls": [
                        {"name": "forecast", "arguments": {"city": "Oslo"}},
                        {"name": "raw", "arguments": '{"broken": ', "id": "fixed-id"},
                    ],
                },
                {"content": "It is {{tool:forecast}}.", "finish_reason": "length"},
            ],
        },
        {"match": "", "turns": ["shorthand answer"]},
    ],
    "latency": {"first_token_ms": 5, "per_token_ms": 1.5, "response_ms": 0},
    "faults": [{"kind": "status", "status": 429, "times": 2, "message": "slow down"}],
}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant_calls(*calls: tuple[str, str]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}
            for call_id, name in calls
        ],
    }


def tool(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def two_step(name: str = "s") -> Script:
    return Script(
        scenarios=(
            Scenario(
                name=name,
                match="",
                turns=(
                    Turn(tool_calls=(ScriptedToolCall("search", {"q": "x"}),)),
                    Turn(content="done: {{tool:search}}"),
                ),
            ),
        )
    )


class TestParsing:
    def test_round_trip_through_json(self) -> None:
        script = Script.from_dict(FULL_SCRIPT)
        again = Script.from_dict(json.loads(json.dumps(script.to_dict())))
        assert again == script

    def test_parsed_values(self) -> None:
        script = Script.from_dict(FULL_SCRIPT)
        weather = script.scenarios[0]
        assert weather.name == "weather"
        assert weather.turns[0].tool_calls[0] == ScriptedToolCall("forecast", {"city": "Oslo"})
        assert weather.turns[0].tool_calls[1].arguments == '{"broken": '
        assert weather.turns[0].finish_reason == "tool_calls"
        assert weather.turns[1].finish_reason == "length"
        assert script.scenarios[1].turns == (Turn(content="shorthand answer"),)
        assert script.scenarios[1].turns[0].finish_reason == "stop"
        assert script.latency == Latency(first_token_ms=5, per_token_ms=1.5)
        assert script.faults == (Fault("status", status=429, times=2, message="slow down"),)

    def test_from_json_file(self, tmp_path: Path) -> None:
        path = tmp_path / "script.json"
        path.write_text(json.dumps(FULL_SCRIPT), encoding="utf-8")
        assert Script.from_json_file(path) == Script.from_dict(FULL_SCRIPT)

    def test_from_json_file_names_the_file_when_not_json(self, tmp_path: Path) -> None:
        path = tmp_path / "broken.json"
        path.write_text("{nope", encoding="utf-8")
        with pytest.raises(ValueError, match=r"broken\.json: not valid JSON"):
            Script.from_json_file(path)

    @pytest.mark.parametrize(
        ("data", "field"),
        [
            ({"scenarios": [{"match": "x", "turns": []}]}, r"scenarios\[0\]\.turns"),
            ({"scenarios": [{"match": "(", "turns": ["a"]}]}, r"scenarios\[0\]\.match"),
            ({"scenarios": [{"match": 3, "turns": ["a"]}]}, r"scenarios\[0\]\.match"),
            ({"scenarios": [{"turns": [{"content": 1}]}]}, r"scenarios\[0\]\.turns\[0\]\.content"),
            ({"scenarios": [{"turns": [{"tool_calls": [{"arguments": {}}]}]}]}, r"tool_calls\[0\]\.name"),
            ({"scenarios": [{"turns": [{"tool_calls": [{"name": "t", "arguments": 5}]}]}]}, r"\.arguments"),
            ({"scenarios": [{"turns": [{"contnet": "typo"}]}]}, r"scenarios\[0\]\.turns\[0\]\.contnet"),
            ({"scenarios": "nope"}, r"scenarios: expected a list"),
            ({"latency": {"per_token_ms": -1}}, r"latency\.per_token_ms"),
            ({"latency": {"per_token_ms": True}}, r"latency\.per_token_ms"),
            ({"faults": [{"kind": "explode"}]}, r"faults\[0\]\.kind"),
            ({"faults": [{"kind": "status", "status": 200}]}, r"faults\[0\]\.status"),
            ({"faults": [{"kind": "status", "times": 0}]}, r"faults\[0\]\.times"),
            ({"faults": [{"kind": "broken_stream", "times": "2"}]}, r"faults\[0\]\.times"),
            ({"sceanrios": []}, r"sceanrios: unknown field"),
            ([], r"script: expected an object"),
        ],
    )
    def test_bad_fields_are_named(self, data: Any, field: str) -> None:
        with pytest.raises(ValueError, match=field):
            Script.from_dict(data)

    def test_constructor_validates_too(self) -> None:
        with pytest.raises(ValueError, match="turns must not be empty"):
            Scenario(match="", turns=())
        with pytest.raises(ValueError, match="kind"):
            Fault("nope")  # type: ignore[arg-type]


class TestSelection:
    def test_turn_index_counts_assistant_messages_after_last_user(self) -> None:
        script = two_step()
        first = script.select([user("go")], tools_offered=True)
        assert [call.name for call in first.tool_calls] == ["search"]
        assert first.finish_reason == "tool_calls"

        conversation = [user("go"), assistant_calls(("c1", "search")), tool("c1", "found it")]
        second = script.select(conversation, tools_offered=True)
        assert second.content == "done: found it"
        assert second.tool_calls == ()
        assert second.finish_reason == "stop"

        # A new user message restarts the scenario even though assistant turns exist before it.
        restarted = script.select([*conversation, {"role": "assistant", "content": "x"}, user("again")], True)
        assert restarted.tool_calls

    def test_last_turn_repeats_past_the_end(self) -> None:
        looping = Script(
            scenarios=(Scenario(match="", turns=(Turn(tool_calls=(ScriptedToolCall("again", {}),)),)),)
        )
        messages: list[dict[str, Any]] = [user("loop")]
        ids = []
        for step in range(5):
            turn = looping.select(messages, tools_offered=True)
            assert [call.name for call in turn.tool_calls] == ["again"]
            call_id = turn.tool_calls[0].id
            assert call_id is not None
            ids.append(call_id)
            messages += [assistant_calls((call_id, "again")), tool(call_id, f"r{step}")]
        assert len(set(ids)) == 5

    def test_past_the_end_means_the_last_turn_not_a_wrap_around(self) -> None:
        conversation: list[dict[str, Any]] = [user("go")]
        for step in range(2):
            conversation += [assistant_calls((f"c{step}", "search")), tool(f"c{step}", f"r{step}")]
        turn = two_step().select(conversation, tools_offered=True)
        assert turn.tool_calls == ()
        assert turn.content == "done: r1"

    def test_no_tools_offered_gives_final_text(self) -> None:
        script = two_step()
        forced = script.select([user("go")], tools_offered=False)
        assert forced.content == DEFAULT_FINAL_TEXT
        assert forced.tool_calls == ()
        assert forced.finish_reason == "stop"

        custom = Script.from_dict(FULL_SCRIPT)
        conversation = [user("weather?"), assistant_calls(("c9", "forecast")), tool("c9", "sunny")]
        # Past the end the last turn (plain text) repeats, so ask about the first turn instead:
        assert custom.select([user("weather?")], tools_offered=False).content == "No tools, so: (no result)"
        assert custom.select(conversation, tools_offered=False).content == "It is sunny."

    def test_text_turns_are_unaffected_by_tools_offered(self) -> None:
        script = Script(scenarios=(Scenario(match="", turns=(Turn(content="plain"),)),))
        assert script.select([user("q")], tools_offered=False).content == "plain"

    def test_regex_matches_last_user_message_case_insensitively(self) -> None:
        script = Script(
            scenarios=(
                Scenario(name="a", match=r"\bapples?\b", turns=(Turn(content="apple answer"),)),
                Scenario(name="b", match="PEAR", turns=(Turn(content="pear answer"),)),
                Scenario(name="c", match="pear|apple", turns=(Turn(content="never chosen"),)),
            )
        )
        assert script.select([user("I like Apples")], True).content == "apple answer"
        later = [user("apple"), {"role": "assistant", "content": "."}, user("a pear")]
        assert script.select(later, True).content == "pear answer"
        parts = {
            "role": "user",
            "content": [{"type": "text", "text": "one "}, {"type": "text", "text": "pear"}],
        }
        assert script.select([parts], True).content == "pear answer"

    def test_fallback_echoes_the_last_user_message(self) -> None:
        script = Script(scenarios=(Scenario(match="^never$", turns=(Turn(content="no"),)),))
        messages = [{"role": "system", "content": "be brief"}, user("first"), user("hello {{user}} there")]
        assert script.select(messages, True).content == "You said: hello {{user}} there"
        assert Script().select([{"role": "system", "content": "only system"}], True).content == "You said: "

    def test_demo_script_plays_the_parallel_tool_question(self) -> None:
        script = demo_script()
        first = script.select([user(DEMO_QUESTION)], tools_offered=True)
        assert [(c.name, c.arguments) for c in first.tool_calls] == [
            ("calculator", {"expression": "1234 * 5678"}),
            ("current_time", {"timezone": "UTC"}),
        ]
        assert first.reasoning
        ids = [c.id or "" for c in first.tool_calls]
        conversation = [
            user(DEMO_QUESTION),
            assistant_calls((ids[0], "calculator"), (ids[1], "current_time")),
            tool(ids[1], "12:00:00Z"),
            tool(ids[0], "7006652"),
        ]
        answer = script.select(conversation, tools_offered=True).content
        assert answer.startswith("1234 × 5678 = 7006652, and the current time in UTC is 12:00:00Z.")


class TestTemplates:
    def test_tool_placeholder_uses_most_recent_result_of_that_tool(self) -> None:
        messages = [
            user("q"),
            assistant_calls(("a1", "search"), ("a2", "fetch")),
            tool("a1", "old search"),
            tool("a2", "page"),
            assistant_calls(("a3", "search")),
            tool("a3", "new search"),
        ]
        assert render("{{tool:search}} / {{tool:fetch}}", messages) == "new search / page"
        assert render("{{tool:missing}}", messages) == NO_RESULT
        assert render("{{last_tool}}|{{user}}", messages) == "new search|q"

    def test_no_tool_messages(self) -> None:
        assert render("{{last_tool}} {{tool:x}}", [user("u")]) == f"{NO_RESULT} {NO_RESULT}"

    def test_unknown_placeholders_and_plain_braces_stay(self) -> None:
        assert render("{{other}} {json} {{ user }}", [user("u")]) == "{{other}} {json} {{ user }}"


class TestToolCallIds:
    def test_ids_are_deterministic(self) -> None:
        messages = [user("go")]
        first = two_step().select(messages, True).tool_calls[0].id
        assert first is not None
        assert first == two_step().select(messages, True).tool_calls[0].id
        assert first.startswith("call_0_0_")

    def test_ids_differ_by_position_turn_scenario_and_user_turn(self) -> None:
        parallel = Script(
            scenarios=(
                Scenario(
                    match="",
                    turns=(Turn(tool_calls=(ScriptedToolCall("t", {}), ScriptedToolCall("t", {}))),),
                ),
            )
        )
        a, b = (call.id for call in parallel.select([user("go")], True).tool_calls)
        assert a != b

        seen = {two_step("one").select([user("go")], True).tool_calls[0].id}
        seen.add(two_step("two").select([user("go")], True).tool_calls[0].id)
        later = [
            user("go"),
            assistant_calls(("x", "search")),
            tool("x", "r"),
            {"role": "assistant", "content": "ok"},
        ]
        seen.add(two_step("one").select([*later, user("go again")], True).tool_calls[0].id)
        assert len(seen) == 3

    def test_explicit_ids_are_kept(self) -> None:
        script = Script.from_dict(FULL_SCRIPT)
        calls = script.select([user("weather")], True).tool_calls
        assert calls[1].id == "fixed-id"
        assert calls[0].id is not None
        assert calls[0].id.startswith("call_0_0_")


class TestWirePieces:
    @pytest.mark.parametrize("text", ["", "one", "  lead and trail  ", "a  b\n\nc\t", "   "])
    def test_text_pieces_join_back_exactly(self, text: str) -> None:
        pieces = split_text(text)
        assert "".join(pieces) == text
        assert all(piece for piece in pieces)

    def test_text_is_split_per_word(self) -> None:
        assert split_text(" hello big world") == [" hello ", "big ", "world"]

    @pytest.mark.parametrize("arguments", ["", "{}", '{"expression": "1234 * 5678"}', "x" * 100])
    def test_argument_pieces_join_back_exactly(self, arguments: str) -> None:
        pieces = split_arguments(arguments)
        assert "".join(pieces) == arguments
        assert len(pieces) <= 3

    def test_completion_tokens_count_every_streamed_piece(self) -> None:
        turn = Turn(content="a b", reasoning="r", tool_calls=(ScriptedToolCall("t", '{"k": 1}', id="i"),))
        pieces = Pieces.of(turn)
        assert pieces.completion_tokens == 1 + 2 + 1 + 3


def test_a_replay_transcript_is_parsed_and_round_trips() -> None:
    transcript = "HTTP/1.1 200 OK\ncontent-type: text/event-stream\n\ndata: {}\n\ndata: [DONE]\n\n"
    recording = Recording.parse(transcript)
    assert (recording.status, recording.content_type, recording.is_stream) == (200, "text/event-stream", True)
    assert recording.events() == [b"data: {}\n\n", b"data: [DONE]\n\n"]
    script = Script(scenarios=(Scenario(match="", turns=(Turn(replay=recording),)),))
    assert Script.from_dict(script.to_dict()) == script
    assert Recording.from_dict({"status": 404, "body": "404 page not found"}).is_stream is False


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ("HTTP 200\n", "blank line"),
        ("HTTP two hundred\n\nbody", "first line"),
        ("HTTP 200\nno colon here\n\nbody", "line 2"),
        ({"status": 700}, "replay.status"),
        ({"status": 200, "bodie": ""}, "replay.bodie: unknown field"),
        ({"headers": {"retry-after": 5}}, "replay.headers"),
    ],
)
def test_a_bad_replay_is_refused_naming_what_is_wrong(data: object, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        Turn.from_dict({"replay": data}, "turns[0]")
