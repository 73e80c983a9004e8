"""Contract ↔ OpenAI payload mapping and streamed tool-call assembly."""

from __future__ import annotations

import json

import pytest

from agentloop.kernel.errors import InvalidArgument
from agentloop.v1 import common_pb2, reasoner_pb2
from reasoner_svc.assembly import AnswerReader, MalformedAnswer, result_from_completion
from reasoner_svc.convert import request_kwargs


def _params(**kw: object) -> reasoner_pb2.CompletionParams:
    return reasoner_pb2.CompletionParams(**kw)  # type: ignore[arg-type]


def _calls(*deltas: dict[str, object]) -> dict[str, object]:
    return {"choices": [{"index": 0, "delta": {"tool_calls": list(deltas)}}]}


def _call(index: int, call_id: str | None, name: str | None, arguments: str | None) -> dict[str, object]:
    delta: dict[str, object] = {"index": index, "function": {"name": name, "arguments": arguments}}
    if call_id is not None:
        delta["id"] = call_id
    return delta


def test_reader_joins_interleaved_tool_call_deltas_by_index() -> None:
    acc = AnswerReader()
    acc.add_chunk({"choices": [{"index": 0, "delta": {"content": "Let me "}}]})
    acc.add_chunk(_calls(_call(0, "call_a", "calculator", "")))
    acc.add_chunk(_calls(_call(1, "call_b", "current_time", None)))
    acc.add_chunk(_calls(_call(0, None, None, '{"expr')))
    acc.add_chunk(_calls(_call(1, None, None, '{"timezone": "UTC"}')))
    acc.add_chunk(_calls(_call(0, None, None, 'ession": "1+1"}')))
    acc.add_chunk({"choices": [{"index": 0, "delta": {"content": "check."}}]})
    result = acc.result()
    calls = [(c.id, c.name, json.loads(c.arguments_json)) for c in result.message.tool_calls]
    assert calls == [
        ("call_a", "calculator", {"expression": "1+1"}),
        ("call_b", "current_time", {"timezone": "UTC"}),
    ]
    assert result.message.content == "Let me check."
    assert result.finish_reason == "tool_calls"


def test_reader_orders_calls_by_index_not_arrival() -> None:
    acc = AnswerReader()
    acc.add_chunk(_calls(_call(2, "c2", "b", "{}")))
    acc.add_chunk(_calls(_call(0, "c0", "a", "{}")))
    assert [c.id for c in acc.result().message.tool_calls] == ["c0", "c2"]


def test_reader_without_calls_finishes_with_stop() -> None:
    acc = AnswerReader()
    acc.add_chunk({"choices": [{"index": 0, "delta": {"content": "hi"}}]})
    assert acc.result().finish_reason == "stop"
    assert not acc.result().message.tool_calls


def test_request_kwargs_maps_roles_tools_and_choice() -> None:
    params = _params(
        model="m",
        messages=[
            common_pb2.Message(role=common_pb2.ROLE_SYSTEM, content="sys"),
            common_pb2.Message(role=common_pb2.ROLE_USER, content="q"),
            common_pb2.Message(
                role=common_pb2.ROLE_ASSISTANT,
                tool_calls=[common_pb2.ToolCall(id="c1", name="calc", arguments_json='{"x": 1}')],
            ),
            common_pb2.Message(role=common_pb2.ROLE_TOOL, tool_call_id="c1", content="2"),
        ],
        tools=[
            common_pb2.ToolSpec(name="calc", description="d", parameters_json_schema='{"type": "object"}')
        ],
        tool_choice=common_pb2.ToolChoice(function_name="calc"),
        temperature=0.5,
    )
    kwargs = request_kwargs(params, "default")
    assert kwargs["model"] == "m"
    assert [m["role"] for m in kwargs["messages"]] == ["system", "user", "assistant", "tool"]
    assert kwargs["messages"][2]["content"] is None
    assert kwargs["messages"][2]["tool_calls"][0]["function"] == {"name": "calc", "arguments": '{"x": 1}'}
    assert kwargs["messages"][3]["tool_call_id"] == "c1"
    assert kwargs["tools"][0]["function"]["parameters"] == {"type": "object"}
    assert kwargs["tool_choice"] == {"type": "function", "function": {"name": "calc"}}
    assert kwargs["temperature"] == 0.5


def test_request_kwargs_uses_default_model_and_mode_choice() -> None:
    params = _params(
        messages=[common_pb2.Message(role=common_pb2.ROLE_USER, content="q")],
        tools=[common_pb2.ToolSpec(name="t")],
        tool_choice=common_pb2.ToolChoice(mode=common_pb2.TOOL_CHOICE_MODE_REQUIRED),
    )
    kwargs = request_kwargs(params, "default")
    assert kwargs["model"] == "default"
    assert kwargs["tool_choice"] == "required"
    assert kwargs["tools"][0]["function"]["parameters"] == {"type": "object", "properties": {}}


@pytest.mark.parametrize(
    ("params", "field"),
    [
        (_params(), "params.messages"),
        (_params(messages=[common_pb2.Message(content="x")]), "params.messages[0].role"),
        (
            _params(messages=[common_pb2.Message(role=common_pb2.ROLE_TOOL, content="x")]),
            "params.messages[0].tool_call_id",
        ),
        (
            _params(
                messages=[common_pb2.Message(role=common_pb2.ROLE_USER)],
                tools=[common_pb2.ToolSpec(name="t", parameters_json_schema="[1")],
            ),
            "params.tools[0].parameters_json_schema",
        ),
        (
            _params(messages=[common_pb2.Message(role=common_pb2.ROLE_USER)], tools=[common_pb2.ToolSpec()]),
            "params.tools[0].name",
        ),
        (
            _params(messages=[common_pb2.Message(role=common_pb2.ROLE_USER)], temperature=3.0),
            "params.temperature",
        ),
        (
            _params(messages=[common_pb2.Message(role=common_pb2.ROLE_USER)], max_tokens=0),
            "params.max_tokens",
        ),
        (
            _params(messages=[common_pb2.Message(role=common_pb2.ROLE_USER)], response_format_json="{"),
            "params.response_format_json",
        ),
        (
            _params(
                messages=[common_pb2.Message(role=common_pb2.ROLE_USER)],
                tool_choice=common_pb2.ToolChoice(function_name="x"),
            ),
            "params.tool_choice",
        ),
    ],
)
def test_request_kwargs_rejects_bad_fields_naming_them(
    params: reasoner_pb2.CompletionParams, field: str
) -> None:
    with pytest.raises(InvalidArgument) as info:
        request_kwargs(params, "m")
    assert info.value.field == field
    assert info.value.message.startswith(field + ":")


def test_add_chunk_folds_reasoning_content_tool_calls_and_usage() -> None:
    acc = AnswerReader()
    chunks = [
        {"model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
        {"choices": [{"index": 0, "delta": {"reasoning_content": "hmm"}}]},
        {"choices": [{"index": 0, "delta": {"content": "Hi "}}]},
        {
            "choices": [
                {"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f"}}]}}
            ]
        },
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}},
    ]
    pieces = [acc.add_chunk(c) for c in chunks]
    assert pieces[1] == ("hmm", "")
    assert pieces[2] == ("", "Hi ")
    result = acc.result()
    assert result.model == "m"
    assert result.usage.total_tokens == 5
    assert [(c.id, c.name, c.arguments_json) for c in result.message.tool_calls] == [("c", "f", "{}")]


def test_result_from_completion_reads_message_and_rejects_garbage() -> None:
    completion = {
        "model": "m",
        "choices": [
            {
                "message": {
                    "content": None,
                    "reasoning": "why",
                    "tool_calls": [{"id": "x", "function": {"name": "f", "arguments": '{"a": 1}'}}],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
    result = result_from_completion(completion)
    assert result.message.reasoning_content == "why"
    assert result.message.tool_calls[0].arguments_json == '{"a": 1}'
    with pytest.raises(MalformedAnswer, match="not a JSON object"):
        result_from_completion(["not", "an", "object"])
    with pytest.raises(MalformedAnswer, match="message"):
        result_from_completion({"choices": [{"message": "text"}]})
