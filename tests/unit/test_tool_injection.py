"""Injected parameters: hidden from the schema, listed in the spec, filled by the executor."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import pytest

from agentloop.v1 import common_pb2
from tool_svc import (
    Conversation,
    Injected,
    RunId,
    RunMetadata,
    ThreadId,
    Tool,
    ToolContext,
    ToolRegistry,
    UserId,
    tool,
)
from tool_svc.executor import execute
from tool_svc.injected import InjectedValues

INVALID = common_pb2.TOOL_ERROR_KIND_INVALID_ARGUMENTS


@tool
def summarize(
    topic: str,
    history: Conversation,
    user: UserId,
    thread: ThreadId,
    run: RunId,
    meta: RunMetadata,
    ctx: ToolContext,
) -> dict[str, Any]:
    """Summarize the conversation about a topic.

    Args:
        topic: What to summarize.
    """
    return {
        "topic": topic,
        "history": history,
        "user": user,
        "thread": thread,
        "run": run,
        "meta": meta,
        "call": ctx.tool_call_id,
    }


CONVERSATION = [
    {"role": "user", "content": "How many orders?"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "sql_query"}]},
]
CONTEXT = common_pb2.InjectedContext(
    user_id="u-7",
    thread_id="t-3",
    run_id="r-9",
    conversation_json=json.dumps(CONVERSATION),
    run_metadata_json=json.dumps({"step": 2, "max_steps": 8, "tools_used": ["sql_query"]}),
)


async def results(
    registry: ToolRegistry,
    calls: Sequence[common_pb2.ToolCall],
    injected: common_pb2.InjectedContext | InjectedValues | None = None,
) -> dict[str, common_pb2.ToolResult]:
    return {
        event.tool_call_id: event
        async for event in execute(registry, calls, 5, 4, injected=injected)
        if isinstance(event, common_pb2.ToolResult)
    }


def call(call_id: str, name: str, arguments: dict[str, Any]) -> common_pb2.ToolCall:
    return common_pb2.ToolCall(id=call_id, name=name, arguments_json=json.dumps(arguments))


@pytest.mark.parametrize(
    ("annotation", "kind"),
    [
        (Conversation, "conversation"),
        (UserId, "user_id"),
        (ThreadId, "thread_id"),
        (RunId, "run_id"),
        (RunMetadata, "run_metadata"),
        (UserId | None, "user_id"),
    ],
)
def test_each_kind_is_hidden_from_the_schema_and_listed_in_the_spec(annotation: Any, kind: str) -> None:
    def fn(query: str, value: Any) -> str:
        """Look something up."""
        return query

    fn.__annotations__ = {"query": str, "value": annotation, "return": str}
    built = Tool(fn)
    assert built.parameters == {
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
        "additionalProperties": False,
    }
    assert built.injected == (("value", kind),)
    spec = built.spec()
    assert list(spec.injected_parameters) == ["value"]
    assert "value" not in json.loads(spec.parameters_json_schema)["properties"]


def test_spec_lists_injected_parameters_in_signature_order() -> None:
    spec = Tool(summarize).spec()
    assert list(spec.injected_parameters) == ["history", "user", "thread", "run", "meta"]
    schema = json.loads(spec.parameters_json_schema)
    assert list(schema["properties"]) == ["topic"]
    assert schema["required"] == ["topic"]


def test_string_annotations_resolve_to_markers() -> None:
    # This module uses `from __future__ import annotations`: every hint above is a string.
    assert isinstance(summarize.__annotations__["user"], str)
    assert Tool(summarize).injected[1] == ("user", "user_id")


def test_hand_written_annotated_marker_works() -> None:
    def whoami(who: Annotated[str, "doc", Injected("user_id")]) -> str:
        """Say who is asking."""
        return who

    assert Tool(whoami).injected == (("who", "user_id"),)


def test_other_annotated_metadata_is_not_injected() -> None:
    def echo(text: Annotated[str, "just a note"]) -> str:
        """Echo."""
        return text

    built = Tool(echo)
    assert built.injected == ()
    assert built.parameters["properties"] == {"text": {"type": "string"}}


@pytest.mark.parametrize(
    ("annotation", "message"),
    [
        (
            Annotated[int, Injected("user_id")],
            "injected as 'user_id', so its type must be str (write it as UserId)",
        ),
        (Annotated[list[str], Injected("conversation")], "must be list[dict[str, typing.Any]]"),
        (Annotated[str, Injected("run_metadata")], "(write it as RunMetadata), not str"),
        (Annotated[str, Injected("user_id"), Injected("run_id")], "has 2 Injected markers"),
        (list[UserId], "Injected markers only work on a tool's own parameters"),
        (dict[str, RunId], "Injected markers only work on a tool's own parameters"),
    ],
)
def test_wrong_injected_annotations_fail_registration(annotation: Any, message: str) -> None:
    def fn(value: Any) -> str:
        """Anything."""
        return str(value)

    fn.__annotations__ = {"value": annotation, "return": str}
    with pytest.raises(TypeError, match=r"parameter 'value'") as raised:
        Tool(fn)
    assert message in str(raised.value)


@dataclass
class Request:
    query: str
    user: UserId


def test_injected_dataclass_fields_fail_registration() -> None:
    def fn(request: Request) -> str:
        """Anything."""
        return request.query

    with pytest.raises(TypeError, match="Request has an injected field"):
        Tool(fn)


def test_unknown_injected_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown injected kind 'tenant'"):
        Injected("tenant")  # type: ignore[arg-type]


async def test_executor_fills_every_injected_kind() -> None:
    registry = ToolRegistry([summarize])
    done = await results(registry, [call("c", "summarize", {"topic": "orders"})], CONTEXT)
    assert not done["c"].is_error, done["c"].content
    assert json.loads(done["c"].content) == {
        "topic": "orders",
        "history": CONVERSATION,
        "user": "u-7",
        "thread": "t-3",
        "run": "r-9",
        "meta": {"step": 2, "max_steps": 8, "tools_used": ["sql_query"]},
        "call": "c",
    }


async def test_missing_context_gives_empty_values_of_the_right_type() -> None:
    registry = ToolRegistry([summarize])
    for injected in (None, common_pb2.InjectedContext()):
        done = await results(registry, [call("c", "summarize", {"topic": "x"})], injected)
        assert json.loads(done["c"].content) == {
            "topic": "x",
            "history": [],
            "user": "",
            "thread": "",
            "run": "",
            "meta": {},
            "call": "c",
        }


async def test_existing_call_sites_without_injected_still_work() -> None:
    registry = ToolRegistry([summarize])
    calls = [call("c", "summarize", {"topic": "x"})]
    events = [event async for event in execute(registry, calls, 5, 4)]
    assert not events[-1].is_error  # type: ignore[union-attr]


async def test_the_model_cannot_set_an_injected_parameter() -> None:
    registry = ToolRegistry([summarize])
    done = await results(
        registry,
        [
            call("user", "summarize", {"topic": "x", "user": "admin"}),
            call("history", "summarize", {"topic": "x", "history": []}),
        ],
        CONTEXT,
    )
    for call_id in ("user", "history"):
        assert done[call_id].is_error
        assert done[call_id].error_kind == INVALID
        assert f"unknown property '{call_id}'; allowed properties: topic" in done[call_id].content


async def test_context_json_is_parsed_once_per_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    original = json.loads

    def counting_loads(text: str, **kwargs: Any) -> Any:
        parsed.append(text)
        return original(text, **kwargs)

    seen: list[int] = []

    @tool
    def remember(n: int, history: Conversation) -> int:
        """Remember."""
        seen.append(id(history))
        return len(history)

    monkeypatch.setattr("tool_svc.injected.json.loads", counting_loads)
    registry = ToolRegistry([remember])
    calls = [call(str(n), "remember", {"n": n}) for n in range(5)]
    done = await results(registry, calls, CONTEXT)
    assert {result.content for result in done.values()} == {"2"}
    assert parsed.count(CONTEXT.conversation_json) == 1
    assert parsed.count(CONTEXT.run_metadata_json) == 1
    assert len(set(seen)) == 1


@pytest.mark.parametrize(
    ("context", "message"),
    [
        (common_pb2.InjectedContext(conversation_json="[{"), "conversation_json: is not valid JSON"),
        (
            common_pb2.InjectedContext(conversation_json='{"role": "user"}'),
            "conversation_json: must be a JSON array",
        ),
        (
            common_pb2.InjectedContext(conversation_json="[1, 2]"),
            "conversation_json: must be a JSON array of objects",
        ),
        (
            common_pb2.InjectedContext(run_metadata_json="[]"),
            "run_metadata_json: must be a JSON object, got an array",
        ),
    ],
)
async def test_unusable_context_json_is_refused_before_any_call(
    context: common_pb2.InjectedContext, message: str
) -> None:
    ran: list[str] = []

    @tool
    def probe() -> str:
        """Probe."""
        ran.append("yes")
        return "ran"

    with pytest.raises(ValueError, match=message):
        await results(ToolRegistry([probe]), [call("p", "probe", {})], context)
    assert ran == []


def test_injected_values_from_context() -> None:
    values = InjectedValues.from_context(CONTEXT)
    assert values.conversation == CONVERSATION
    assert values.value("user_id") == "u-7"
    assert values.value("run_metadata")["step"] == 2
    empty = InjectedValues.from_context(None)
    assert empty.value("conversation") == []
    assert empty.value("conversation") is not empty.value("conversation")
    with pytest.raises(ValueError, match="unknown injected kind"):
        empty.value("tenant")


def test_injected_parameters_keep_the_function_directly_callable() -> None:
    out = summarize("x", [], "u", "t", "r", {}, ToolContext("id", "summarize", 1.0))
    assert out["user"] == "u"
