"""The Reasoner's answer reader against every recorded answer of a real server, and each dialect alone.

The recordings (tests/fixtures/providers) are what real servers sent; the small chunk lists
below isolate one dialect each so a failure names it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from reasoner_svc.assembly import AnswerReader, EndpointError, MalformedAnswer, result_from_completion
from reasoner_svc.think_tags import ThinkMode
from tests.support.recordings import Fixture, answers, calls_of, failures


def _read(fixture: Fixture) -> AnswerReader:
    reader = AnswerReader(endpoint="http://model.test/v1", think=ThinkMode(fixture.think_tags))
    if fixture.streamed:
        for chunk in fixture.events():
            reader.add_chunk(chunk)
        reader.finish()
    else:
        reader.add_completion(json.loads(fixture.recording.body))
    return reader


def _calls(reader: AnswerReader) -> list[dict[str, Any]]:
    return calls_of(reader.result().message)


@pytest.mark.parametrize("fixture", answers(), ids=lambda f: f.name)
def test_recorded_answer_is_read_exactly(fixture: Fixture) -> None:
    reader = _read(fixture)
    result = reader.result()
    expect = fixture.expect
    assert result.message.content == expect["content"]
    assert result.message.reasoning_content == expect["reasoning"]
    assert _calls(reader) == expect["tool_calls"]
    assert result.finish_reason == expect["finish_reason"]
    assert result.model == expect["model"]
    usage = {k: getattr(result.usage, k) for k in expect["usage"]}
    assert usage == expect["usage"]
    fields = json.loads(result.message.provider_fields_json) if result.message.provider_fields_json else None
    assert fields == expect.get("provider_fields")


@pytest.mark.parametrize(
    "fixture", [f for f in failures() if f.recording.status == 200], ids=lambda f: f.name
)
def test_recorded_error_inside_a_stream_is_an_endpoint_error_with_its_code(fixture: Fixture) -> None:
    with pytest.raises(EndpointError) as info:
        _read(fixture)
    assert fixture.expect_error is not None
    assert fixture.expect_error["message_contains"] in info.value.message
    assert info.value.status == 400


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}


def _call(index: int | None, call_id: str | None, name: str | None, arguments: Any) -> dict[str, Any]:
    delta: dict[str, Any] = {"function": {"name": name, "arguments": arguments}}
    if index is not None:
        delta["index"] = index
    if call_id is not None:
        delta["id"] = call_id
    return _chunk({"tool_calls": [delta]})


def _result(*chunks: dict[str, Any], think: ThinkMode = ThinkMode.OFF) -> AnswerReader:
    reader = AnswerReader(think=think)
    for chunk in chunks:
        reader.add_chunk(chunk)
    reader.finish()
    return reader


def test_parallel_calls_reusing_index_zero_stay_apart() -> None:
    reader = _result(
        _call(0, "call_a", "file_write", '{"filePath": "hello.py", '),
        _call(0, None, None, '"content": "print(1)"}'),
        _call(0, "call_b", "file_write", '{"filePath": "world.py", '),
        _call(0, None, None, '"content": "print(2)"}'),
        _chunk({}, "tool_calls"),
    )
    assert _calls(reader) == [
        {
            "id": "call_a",
            "name": "file_write",
            "arguments_json": '{"filePath": "hello.py", "content": "print(1)"}',
        },
        {
            "id": "call_b",
            "name": "file_write",
            "arguments_json": '{"filePath": "world.py", "content": "print(2)"}',
        },
    ]


def test_calls_without_index_are_told_apart_by_their_names_and_ids() -> None:
    reader = _result(
        _call(None, "a", "weather", '{"city": '),
        _call(None, None, None, '"Oslo"}'),
        _call(None, "b", "weather", {"city": "Lima"}),
    )
    assert [(c["id"], c["arguments_json"]) for c in _calls(reader)] == [
        ("a", '{"city": "Oslo"}'),
        ("b", '{"city":"Lima"}'),
    ]


def test_calls_at_different_indices_stay_apart_even_with_the_same_id() -> None:
    reader = _result(_call(0, "dup", "f", "{}"), _call(1, "dup", "f", '{"a": 1}'), _call(2, "", "g", "{}"))
    assert [(c["id"], c["arguments_json"]) for c in _calls(reader)] == [
        ("dup", "{}"),
        ("dup", '{"a": 1}'),
        ("call_2", "{}"),
    ]


def test_a_new_id_without_a_name_continues_the_same_call() -> None:
    reader = _result(_call(0, "a", "f", '{"x"'), _call(0, "a-renamed", None, ": 1}"))
    assert _calls(reader) == [{"id": "a", "name": "f", "arguments_json": '{"x": 1}'}]


def test_arguments_sent_as_an_object_become_compact_json_text_streamed_or_not() -> None:
    streamed = _result(_call(0, "c", "f", {"a": [1, "é"]}))
    assert _calls(streamed)[0]["arguments_json"] == '{"a":[1,"é"]}'
    whole = result_from_completion(
        {
            "choices": [
                {"message": {"tool_calls": [{"id": "c", "function": {"name": "f", "arguments": {"a": 1}}}]}}
            ]
        }
    )
    assert whole.message.tool_calls[0].arguments_json == '{"a":1}'


def test_content_parts_split_into_reasoning_text_and_refusal() -> None:
    reader = _result(
        _chunk({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "hmm"}]}]}),
        _chunk({"content": [{"type": "text", "text": "Yes"}, {"type": "image_url", "image_url": {}}]}),
        _chunk({"content": [{"type": "refusal", "refusal": ", but no."}]}),
        _chunk({"content": None}),
    )
    result = reader.result()
    assert (result.message.reasoning_content, result.message.content) == ("hmm", "Yes, but no.")


def test_reasoning_details_text_is_surfaced_when_no_reasoning_field_came() -> None:
    details = [{"type": "reasoning.text", "text": "Let me think.", "index": 0}]
    reader = _result(_chunk({"reasoning_details": details}), _chunk({"content": "ok"}))
    assert reader.result().message.reasoning_content == "Let me think."
    # The details are also kept, to go back to the provider with the conversation.
    assert json.loads(reader.result().message.provider_fields_json) == {"reasoning_details": details}


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 64])
def test_think_tags_are_split_out_however_the_stream_cuts_them(size: int) -> None:
    text = "\n<think>\nStep one.</think>\n\nThe answer is <b>4</b>."
    chunks = [_chunk({"content": text[i : i + size]}) for i in range(0, len(text), size)]
    result = _result(*chunks, think=ThinkMode.TAGS).result()
    assert (result.message.reasoning_content, result.message.content) == (
        "Step one.",
        "The answer is <b>4</b>.",
    )
    off = _result(*chunks).result()
    assert off.message.content == text


def test_open_think_mode_reads_text_before_the_close_tag_as_reasoning() -> None:
    result = _result(
        _chunk({"content": "I ponder.</th"}), _chunk({"content": "ink>Done."}), think=ThinkMode.OPEN
    )
    assert (result.result().message.reasoning_content, result.result().message.content) == (
        "I ponder.",
        "Done.",
    )


def test_usage_and_finish_reason_are_found_wherever_the_server_put_them() -> None:
    in_choice = _result(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"content": "x"},
                    "finish_reason": "length",
                    "usage": {"prompt_tokens": 4, "completion_tokens": 1},
                }
            ]
        }
    )
    assert (in_choice.result().usage.total_tokens, in_choice.result().finish_reason) == (5, "length")
    deepseek = _result(
        _chunk({"content": "x"}),
        {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 1, "prompt_cache_hit_tokens": 8}},
    )
    assert deepseek.result().usage.cached_prompt_tokens == 8
    empty_finish = _result(_chunk({"content": "x"}, ""))
    assert empty_finish.result().finish_reason == "stop"


def test_provider_fields_on_calls_are_kept_merged_across_deltas() -> None:
    signature = {"google": {"thought_signature": "EjQK"}}
    reader = _result(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "id": "f1",
                                "type": "function",
                                "function": {"name": "f", "arguments": "{}"},
                                "extra_content": signature,
                            }
                        ]
                    },
                }
            ]
        },
        {"choices": [{"index": 0, "delta": {"channel": "analysis", "token_id": 7}}]},
    )
    assert _calls(reader)[0]["provider_fields"] == {"extra_content": signature}
    # Annotations of the stream itself are not state the provider wants back.
    assert reader.result().message.provider_fields_json == ""


@pytest.mark.parametrize(
    ("chunk", "problem"),
    [
        (["not", "a", "chunk"], "not a JSON object"),
        ({"choices": "nope"}, "choices is a string"),
        ({"choices": [{"index": 0, "delta": {"content": 3}}]}, "content is a number"),
        ({"choices": [{"index": 0, "delta": {"tool_calls": {"index": 0}}}]}, "tool_calls is an object"),
        ({"choices": [{"index": 0, "delta": {"tool_calls": [{"function": "f"}]}}]}, "function is a string"),
    ],
)
def test_a_chunk_that_cannot_be_read_names_the_endpoint_and_the_problem(chunk: Any, problem: str) -> None:
    reader = AnswerReader(endpoint="http://model.test/v1")
    with pytest.raises(MalformedAnswer) as info:
        reader.add_chunk(chunk)
    assert "http://model.test/v1" in str(info.value)
    assert problem in str(info.value)


@pytest.mark.parametrize(
    ("chunk", "status", "code"),
    [
        ({"error": {"message": "Overloaded", "type": "overloaded_error"}}, 0, "overloaded_error"),
        (
            {"object": "error", "message": "bad", "type": "BadRequestError", "code": 400},
            400,
            "BadRequestError",
        ),
        (
            {
                "choices": [{"index": 0, "delta": {}, "finish_reason": "error"}],
                "error": {"code": 502, "message": "upstream"},
            },
            502,
            "",
        ),
    ],
)
def test_an_error_inside_a_stream_is_raised_with_its_code(chunk: Any, status: int, code: str) -> None:
    with pytest.raises(EndpointError) as info:
        AnswerReader().add_chunk(chunk)
    assert (info.value.status, info.value.code) == (status, code)
