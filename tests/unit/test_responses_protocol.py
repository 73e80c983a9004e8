"""The Responses API protocol: reading real recorded streams and each event shape alone, and the request body.

The recordings (tests/fixtures/providers, protocol "responses") are what real servers sent; the
small event lists below isolate one shape each so a failure names it.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import pytest

from agentloop.kernel.errors import InvalidArgument, ResourceExhausted, Unavailable
from agentloop.v1 import common_pb2, reasoner_pb2
from reasoner_svc.assembly import EndpointError, MalformedAnswer
from reasoner_svc.convert import OUTPUT_FIELD, message_to_openai
from reasoner_svc.endpoint_errors import classify
from reasoner_svc.responses_reader import ResponsesReader
from reasoner_svc.responses_request import responses_body
from tests.support.recordings import Fixture, answers, calls_of, failures


def _read(events: list[Any]) -> ResponsesReader:
    reader = ResponsesReader(endpoint="http://model.test/v1")
    for event in events:
        reader.add_event(event)
    reader.finish()
    return reader


@pytest.mark.parametrize("fixture", answers("responses"), ids=lambda f: f.name)
def test_recorded_responses_stream_is_read_exactly(fixture: Fixture) -> None:
    reader = _read(fixture.events())
    result = reader.result()
    expect = fixture.expect
    assert result.message.content == expect["content"]
    assert result.message.reasoning_content == expect["reasoning"]
    assert calls_of(result.message) == expect["tool_calls"]
    assert (result.finish_reason, result.model) == (expect["finish_reason"], expect["model"])
    assert {k: getattr(result.usage, k) for k in expect["usage"]} == expect["usage"]
    fields = json.loads(result.message.provider_fields_json) if result.message.provider_fields_json else {}
    kept = fields.get(OUTPUT_FIELD, [])
    assert [[item["type"], item.get("id", "")] for item in kept] == expect.get("output_items", [])
    # Reasoning goes back exactly as the server finally holds it (its newest encrypted content).
    held = fixture.completed_output()
    for item in kept:
        if item["type"] == "reasoning":
            assert item == held[item["id"]]


@pytest.mark.parametrize("fixture", failures("responses"), ids=lambda f: f.name)
def test_recorded_responses_error_event_is_classified_like_chat_completions(fixture: Fixture) -> None:
    with pytest.raises(EndpointError) as info:
        _read(fixture.events())
    assert fixture.expect_error is not None
    assert fixture.expect_error["message_contains"] in info.value.message
    failure = classify(info.value, "http://model.test/v1")
    assert isinstance(failure.error, ResourceExhausted)
    assert not failure.retryable  # a spent quota does not come back with another request


def _added(index: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.added", "output_index": index, "item": item}


def _done(index: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.done", "output_index": index, "item": item}


def _args(index: int, item_id: str, delta: str) -> dict[str, Any]:
    return {
        "type": "response.function_call_arguments.delta",
        "output_index": index,
        "item_id": item_id,
        "delta": delta,
    }


def _call(item_id: str, call_id: str, name: str, arguments: str = "") -> dict[str, Any]:
    return {"type": "function_call", "id": item_id, "call_id": call_id, "name": name, "arguments": arguments}


def _completed(output: list[dict[str, Any]] | None = None, **response: Any) -> dict[str, Any]:
    body = {"status": "completed", "model": "m", "output": output or [], **response}
    return {"type": "response.completed", "response": body}


def test_parallel_calls_whose_argument_deltas_interleave_stay_apart() -> None:
    reader = _read(
        [
            _added(0, _call("fc_a", "call_a", "calculator")),
            _added(1, _call("fc_b", "call_b", "calculator")),
            _args(0, "fc_a", '{"expression": '),
            _args(1, "fc_b", '{"expression": '),
            _args(1, "fc_b", '"2 + 2"}'),
            _args(0, "fc_a", '"6 * 7"}'),
            _completed(),
        ]
    )
    assert calls_of(reader.result().message) == [
        {"id": "call_a", "name": "calculator", "arguments_json": '{"expression": "6 * 7"}'},
        {"id": "call_b", "name": "calculator", "arguments_json": '{"expression": "2 + 2"}'},
    ]
    assert reader.result().finish_reason == "tool_calls"


def test_arguments_only_in_the_finished_item_are_read() -> None:
    finished = _call("fc_a", "call_a", "f", '{"x":1}')
    reader = _read([_added(0, _call("fc_a", "call_a", "f")), _done(0, finished), _completed([finished])])
    assert calls_of(reader.result().message)[0]["arguments_json"] == '{"x":1}'


def test_a_summary_sent_only_in_the_finished_item_is_shown_once() -> None:
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Think."}]}
    reader = ResponsesReader()
    shown = [reader.add_event(_done(0, reasoning)), reader.add_event(_completed([reasoning]))]
    reader.finish()
    assert shown == [("Think.", ""), ("", "")]
    assert reader.result().message.reasoning_content == "Think."


def test_text_and_reasoning_deltas_stream_as_content_and_reasoning() -> None:
    reader = ResponsesReader()
    out = [
        reader.add_event({"type": "response.reasoning_summary_text.delta", "item_id": "rs", "delta": "Hm"}),
        reader.add_event({"type": "response.reasoning_text.delta", "item_id": "rs2", "delta": " ok"}),
        reader.add_event({"type": "response.output_text.delta", "item_id": "msg", "delta": "Hi"}),
        reader.add_event({"type": "response.refusal.delta", "item_id": "msg", "delta": "!"}),
    ]
    assert out == [("Hm", ""), (" ok", ""), ("", "Hi"), ("", "!")]


def test_an_error_event_in_its_documented_flat_shape_keeps_its_code() -> None:
    with pytest.raises(EndpointError) as info:
        _read(
            [{"type": "error", "code": "server_error", "message": "The server had an error", "param": None}]
        )
    failure = classify(info.value, "http://model.test/v1")
    assert isinstance(failure.error, Unavailable)
    assert failure.retryable
    assert "The server had an error" in failure.error.message


def test_a_failed_response_is_its_error() -> None:
    failed = {
        "type": "response.failed",
        "response": {"error": {"code": "rate_limit_exceeded", "message": "Slow down"}},
    }
    with pytest.raises(EndpointError) as info:
        _read([failed])
    assert isinstance(classify(info.value, "x").error, ResourceExhausted)


def test_an_incomplete_response_finishes_with_length() -> None:
    incomplete = _completed(status="incomplete", incomplete_details={"reason": "max_output_tokens"})
    incomplete["type"] = "response.incomplete"
    assert _read([incomplete]).result().finish_reason == "length"


def test_a_stream_that_ends_before_completed_is_cut_short_and_retried() -> None:
    with pytest.raises(EndpointError) as info:
        _read([{"type": "response.output_text.delta", "item_id": "m", "delta": "Hi"}])
    failure = classify(info.value, "x")
    assert isinstance(failure.error, Unavailable)
    assert failure.retryable


def test_an_event_that_is_not_an_object_or_has_a_bad_delta_is_malformed() -> None:
    with pytest.raises(MalformedAnswer):
        ResponsesReader().add_event(["not", "an", "event"])
    with pytest.raises(MalformedAnswer, match="delta is a number"):
        ResponsesReader().add_event({"type": "response.output_text.delta", "delta": 3})


def test_a_whole_response_object_is_read() -> None:
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc"}
    message = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Both.", "annotations": []}],
    }
    reader = ResponsesReader()
    reader.add_response(
        {
            "status": "completed",
            "model": "gpt-5",
            "output": [reasoning, message, _call("fc_1", "call_1", "f", "{}")],
            "usage": {
                "input_tokens": 10,
                "output_tokens": 5,
                "output_tokens_details": {"reasoning_tokens": 3},
            },
        }
    )
    result = reader.result()
    assert (result.message.content, result.usage.reasoning_tokens, result.model) == ("Both.", 3, "gpt-5")
    kept = json.loads(result.message.provider_fields_json)[OUTPUT_FIELD]
    assert kept == [reasoning, {"type": "message", "id": "msg_1", "role": "assistant"}, _marker_of_call()]


def _marker_of_call() -> dict[str, Any]:
    return {"type": "function_call", "id": "fc_1", "call_id": "call_1"}


# --- the request body --------------------------------------------------------------------


def _message(role: int, content: str = "", **fields: Any) -> common_pb2.Message:
    return common_pb2.Message(role=role, content=content, **fields)  # type: ignore[arg-type]


def _params(*messages: common_pb2.Message, **fields: Any) -> reasoner_pb2.CompletionParams:
    return reasoner_pb2.CompletionParams(messages=list(messages), **fields)


REASONING = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc"}


def _assistant(content: str, *calls: common_pb2.ToolCall, output: list[dict[str, Any]] | None = None) -> Any:
    fields = json.dumps({OUTPUT_FIELD: output}) if output is not None else ""
    return _message(common_pb2.ROLE_ASSISTANT, content, tool_calls=list(calls), provider_fields_json=fields)


def test_the_conversation_becomes_input_items_with_reasoning_sent_back_in_its_place() -> None:
    calls = [
        common_pb2.ToolCall(id="call_1", name="f", arguments_json='{"a":1}'),
        common_pb2.ToolCall(id="call_2", name="g", arguments_json=""),
    ]
    output = [REASONING, {"type": "message", "id": "msg_1"}, *(_marker(c.id) for c in calls)]
    body = responses_body(
        _params(
            _message(common_pb2.ROLE_SYSTEM, "Be brief."),
            _message(common_pb2.ROLE_USER, "Go"),
            _assistant("Checking.", *calls, output=output),
            _message(common_pb2.ROLE_TOOL, "1", tool_call_id="call_1"),
            _message(common_pb2.ROLE_TOOL, "2", tool_call_id="call_2"),
        ),
        "gpt-5",
    )
    assert body["model"] == "gpt-5"
    assert (body["store"], body["include"]) == (False, ["reasoning.encrypted_content"])
    assert body["input"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Go"},
        REASONING,
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Checking.", "annotations": []}],
        },
        {
            "type": "function_call",
            "id": "fc_call_1",
            "call_id": "call_1",
            "name": "f",
            "arguments": '{"a":1}',
        },
        {"type": "function_call", "id": "fc_call_2", "call_id": "call_2", "name": "g", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "1"},
        {"type": "function_call_output", "call_id": "call_2", "output": "2"},
    ]


def _marker(call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id}


def test_the_contract_holds_the_text_and_calls_a_hook_may_have_changed() -> None:
    changed = common_pb2.ToolCall(id="call_1", name="f", arguments_json='{"edited":true}')
    added = common_pb2.ToolCall(id="call_9", name="h", arguments_json="{}")
    output = [REASONING, _marker("call_1"), _marker("call_gone")]
    items = responses_body(_params(_assistant("New text.", changed, added, output=output)), "m")["input"]
    assert items == [
        REASONING,
        {"role": "assistant", "content": "New text."},
        {
            "type": "function_call",
            "id": "fc_call_1",
            "call_id": "call_1",
            "name": "f",
            "arguments": '{"edited":true}',
        },
        {"type": "function_call", "call_id": "call_9", "name": "h", "arguments": "{}"},
    ]


def test_chat_provider_fields_stay_out_of_a_responses_request_and_the_reverse() -> None:
    chat_fields = json.dumps({"reasoning_details": [{"type": "reasoning.encrypted", "data": "x"}]})
    message = _message(common_pb2.ROLE_ASSISTANT, "Hi", provider_fields_json=chat_fields)
    assert responses_body(_params(message), "m")["input"] == [{"role": "assistant", "content": "Hi"}]
    kept = _assistant("Hi", output=[REASONING, {"type": "message"}])
    assert message_to_openai(kept, "m") == {"role": "assistant", "content": "Hi"}


def test_tools_choice_format_and_limits_take_the_responses_shape() -> None:
    params = _params(
        _message(common_pb2.ROLE_USER, "x"),
        tools=[common_pb2.ToolSpec(name="f", description="d", parameters_json_schema='{"type":"object"}')],
        tool_choice=common_pb2.ToolChoice(function_name="f"),
        response_format_json=json.dumps({"type": "json_schema", "json_schema": {"name": "a", "schema": {}}}),
        temperature=0.5,
        max_tokens=64,
        parallel_tool_calls=False,
    )
    body = responses_body(params, "m", encrypted_reasoning=False, reasoning={"effort": "low"})
    assert body["tools"] == [
        {
            "type": "function",
            "name": "f",
            "parameters": {"type": "object"},
            "description": "d",
            "strict": False,
        }
    ]
    assert body["tool_choice"] == {"type": "function", "name": "f"}
    assert body["text"] == {"format": {"type": "json_schema", "name": "a", "schema": {}}}
    assert (body["temperature"], body["max_output_tokens"], body["parallel_tool_calls"]) == (0.5, 64, False)
    assert body["reasoning"] == {"effort": "low"}
    assert "store" not in body
    assert "include" not in body


@pytest.mark.parametrize(
    ("message", "field"),
    [
        (_message(common_pb2.ROLE_TOOL, "x"), "params.messages[0].tool_call_id"),
        (_message(common_pb2.ROLE_UNSPECIFIED, "x"), "params.messages[0].role"),
        (
            _message(common_pb2.ROLE_ASSISTANT, provider_fields_json="[1]"),
            "params.messages[0].provider_fields_json",
        ),
        (
            _message(common_pb2.ROLE_ASSISTANT, provider_fields_json=json.dumps({OUTPUT_FIELD: [1]})),
            "params.messages[0].provider_fields_json",
        ),
    ],
)
def test_a_bad_message_is_refused_naming_its_field(message: common_pb2.Message, field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        responses_body(_params(message), "m")
    assert info.value.field == field


def test_an_endpoint_error_leaves_a_context_manager_as_itself() -> None:
    """Raising sets the error's traceback, which a frozen error refused (FrozenInstanceError)."""

    @contextlib.contextmanager
    def span() -> Iterator[None]:
        yield

    with pytest.raises(EndpointError, match="boom"), span():
        raise EndpointError("boom", status=500)


def test_a_call_whose_events_name_no_item_is_followed_by_its_output_index() -> None:
    opened = {"type": "function_call", "call_id": "call_a", "name": "f", "arguments": ""}
    finished = {**opened, "arguments": '{"x":1}'}
    reader = _read(
        [
            _added(3, opened),
            {"type": "response.function_call_arguments.delta", "output_index": 3, "delta": '{"x":'},
            {"type": "response.function_call_arguments.delta", "output_index": 3, "delta": "1}"},
            _done(3, finished),
            _completed(),
        ]
    )
    assert calls_of(reader.result().message) == [{"id": "call_a", "name": "f", "arguments_json": '{"x":1}'}]
