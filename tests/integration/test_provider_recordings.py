"""Every recorded answer of a real server, replayed through the scripted model, the Reasoner and the gateway.

The scripted model sends each recording byte for byte (a stream event by event); the real
Reasoner reads it through the openai client; the gateway runs it as a step of a run, stores it
(SQLite and Postgres) and sends the provider's calls and fields back on the next request, which
the scripted model records.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2

from agentloop.kernel.errors import status_from_metadata
from agentloop.kernel.settings import ReasonerSettings
from agentloop.scripted_model import Recording, Scenario, Script, ScriptedModelServer, Turn
from agentloop.testing import final_of, running_stack
from agentloop.v1 import agent_pb2, common_pb2, reasoner_pb2, reasoner_pb2_grpc
from reasoner_svc.service import create_server
from tests.support.recordings import Fixture, answers, calls_of, failures, fixtures

pytestmark = pytest.mark.integration

TOOLS = [common_pb2.ToolSpec(name="weather", parameters_json_schema='{"type": "object"}')]


def _script(items: list[Fixture]) -> Script:
    """One scenario per recording (matched by its name), answered "Done." once the tools ran."""
    return Script(
        scenarios=tuple(
            Scenario(
                match=f"^{f.name}$", turns=(Turn(replay=f.recording), Turn(content="Done.")), name=f.name
            )
            for f in items
        )
    )


@dataclasses.dataclass
class Model:
    server: ScriptedModelServer
    stub: reasoner_pb2_grpc.ReasonerStub


async def _reasoner(items: list[Fixture], think_tags: str, protocol: str = "chat") -> AsyncIterator[Model]:
    async with ScriptedModelServer(_script(items)) as server:
        settings = dataclasses.replace(
            ReasonerSettings(), port=0, base_url=server.base_url, think_tags=think_tags, protocol=protocol
        )
        reasoner = await create_server(settings)
        async with reasoner, grpc.aio.insecure_channel(f"127.0.0.1:{reasoner.port}") as channel:
            yield Model(server, reasoner_pb2_grpc.ReasonerStub(channel))


def _params(name: str) -> reasoner_pb2.CompletionParams:
    return reasoner_pb2.CompletionParams(
        messages=[common_pb2.Message(role=common_pb2.ROLE_USER, content=name)], tools=TOOLS
    )


async def _step(model: Model, fixture: Fixture) -> reasoner_pb2.StepResult:
    if not fixture.streamed:
        reply = await model.stub.Step(reasoner_pb2.StepRequest(params=_params(fixture.name)), timeout=30)
        return reply.result
    events = [
        e
        async for e in model.stub.StreamStep(
            reasoner_pb2.StreamStepRequest(params=_params(fixture.name)), timeout=30
        )
    ]
    streamed = "".join(e.token for e in events if e.WhichOneof("event") == "token")
    thought = "".join(e.reasoning_token for e in events if e.WhichOneof("event") == "reasoning_token")
    result = events[-1].result
    assert (streamed, thought) == (result.message.content, result.message.reasoning_content)
    return result


EVERY_ANSWER = answers() + answers("responses")


@pytest.mark.parametrize("fixture", EVERY_ANSWER, ids=lambda f: f.name)
async def test_reasoner_reads_each_recorded_answer_exactly(fixture: Fixture) -> None:
    async for model in _reasoner([fixture], fixture.think_tags, fixture.protocol):
        result = await _step(model, fixture)
        expect = fixture.expect
        assert result.message.content == expect["content"]
        assert result.message.reasoning_content == expect["reasoning"]
        assert calls_of(result.message) == expect["tool_calls"]
        assert (result.finish_reason, result.model) == (expect["finish_reason"], expect["model"])
        assert {k: getattr(result.usage, k) for k in expect["usage"]} == expect["usage"]
        fields = json.loads(result.message.provider_fields_json or "{}")
        if fixture.protocol == "responses":
            kept = fields.get("responses_output", [])
            assert [[i["type"], i.get("id", "")] for i in kept] == expect.get("output_items", [])
        else:
            assert (fields or None) == expect.get("provider_fields")
        assert result.answered_by == "scripted"
        assert model.server.request_count == 1


@pytest.mark.parametrize("fixture", failures() + failures("responses"), ids=lambda f: f.name)
async def test_reasoner_answers_each_recorded_error_with_its_status_and_the_providers_words(
    fixture: Fixture,
) -> None:
    expect = fixture.expect_error
    assert expect is not None
    async for model in _reasoner([fixture], "off", fixture.protocol):
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await _step(model, fixture)
        error = info.value
        assert error.code().name == expect["code"]
        assert expect["message_contains"] in (error.details() or "")
        assert model.server.request_count == expect["requests"]
        details = status_from_metadata(error.trailing_metadata() or ())
        reasons = []
        for detail in details.details:
            if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                found = error_details_pb2.ErrorInfo()
                detail.Unpack(found)
                reasons.append(found.reason)
        assert reasons == [expect.get("reason", expect["code"])]
        # The budget is spent: the gateway's channel is told not to send the step again.
        assert ("grpc-retry-pushback-ms", "-1") in list(error.trailing_metadata() or ())


GATEWAY_ANSWERS = [f for f in answers() if f.think_tags == "off"]
EMPTY_ANSWER = "The model returned an empty answer."
"""What the gateway answers for a reply with reasoning only (llama.cpp's partial stream)."""


def _assistant(request: dict[str, Any]) -> dict[str, Any]:
    """The first assistant message a chat-completions request carries."""
    return next(m for m in request["messages"] if m["role"] == "assistant")


def _sent_back(fixture: Fixture) -> dict[str, Any]:
    """The assistant message the provider must get back: its calls and fields, verbatim."""
    expect = fixture.expect
    message: dict[str, Any] = {"role": "assistant"}
    if expect["tool_calls"]:
        message["content"] = expect["content"] or None
        message["tool_calls"] = [
            {
                "id": call["id"],
                "type": "function",
                "function": {"name": call["name"], "arguments": call["arguments_json"] or "{}"},
                **call.get("provider_fields", {}),
            }
            for call in expect["tool_calls"]
        ]
    else:
        message["content"] = expect["content"]
    message.update(expect.get("provider_fields", {}))
    return message


async def test_gateway_runs_every_recorded_answer_and_sends_the_providers_fields_back(
    database_url: str,
) -> None:
    async with running_stack(_script(GATEWAY_ANSWERS), database_url=database_url) as stack:
        for fixture in GATEWAY_ANSWERS:
            expect = fixture.expect
            mode = agent_pb2.STREAM_MODE_ALL_STEPS if fixture.streamed else agent_pb2.STREAM_MODE_NONE
            stack.model.clear_requests()
            events = await stack.run(fixture.name, stream_mode=mode)
            final = final_of(events)
            started = [e.tool_start for e in events if e.WhichOneof("event") == "tool_start"]
            assert [(s.tool_call_id, s.name, s.arguments_json) for s in started] == [
                (c["id"], c["name"], c["arguments_json"]) for c in expect["tool_calls"]
            ], fixture.name
            if fixture.streamed:
                first_step = [
                    e.llm_token
                    for e in events
                    if e.WhichOneof("event") == "llm_token" and e.llm_token.step == 0
                ]
                assert "".join(t.token for t in first_step) == expect["content"], fixture.name
                assert "".join(t.reasoning_token for t in first_step) == expect["reasoning"], fixture.name
            answer = "Done." if expect["tool_calls"] else expect["content"] or EMPTY_ANSWER
            assert final.final_reply == answer, fixture.name
            usage = final.metadata.usage
            # The scripted "Done." reports neither, so the run's sums are the recording's.
            assert usage.cached_prompt_tokens == expect["usage"]["cached_prompt_tokens"], fixture.name
            assert usage.reasoning_tokens == expect["usage"]["reasoning_tokens"], fixture.name
            if expect["tool_calls"]:
                # The follow-up of the same run carries the provider's calls and fields back verbatim.
                assert len(stack.model.requests) == 2, fixture.name
                assert _assistant(stack.model.requests[1]) == _sent_back(fixture), fixture.name
            # A next run on the thread reads the conversation back from the store and sends it again.
            thread = events[0].thread_id
            stack.model.clear_requests()
            await stack.run(fixture.name, thread_id=thread, stream_mode=mode)
            assert _assistant(stack.model.requests[0]) == _sent_back(fixture), fixture.name
            thread_view = await stack.agent.GetThread(
                agent_pb2.GetThreadRequest(thread_id=thread), timeout=10
            )
            billed = thread_view.state.metadata.usage
            assert (billed.cached_prompt_tokens, billed.reasoning_tokens) == (
                expect["usage"]["cached_prompt_tokens"],
                expect["usage"]["reasoning_tokens"],
            ), fixture.name
            stored = next(m for m in thread_view.messages if m.role == common_pb2.ROLE_ASSISTANT)
            assert calls_of(stored) == expect["tool_calls"], fixture.name
            assert (
                json.loads(stored.provider_fields_json) if stored.provider_fields_json else None
            ) == expect.get("provider_fields"), fixture.name


RESPONSES_ANSWERS = answers("responses")


def _turn_items(fixture: Fixture) -> list[dict[str, Any]]:
    """The input items that must carry the recorded turn back: its reasoning verbatim, in place."""
    expect = fixture.expect
    if expect.get("output_items"):
        held = fixture.completed_output()
        return [held[item_id] for _, item_id in expect["output_items"]]
    items: list[dict[str, Any]] = []
    if expect["content"]:
        items.append({"role": "assistant", "content": expect["content"]})
    for call in expect["tool_calls"]:
        items.append(
            {
                "type": "function_call",
                "call_id": call["id"],
                "name": call["name"],
                "arguments": call["arguments_json"],
            }
        )
    return items


def _assistant_items(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The first assistant turn's items in a Responses request (after the first user message)."""
    items = request["input"]
    start = next(i for i, item in enumerate(items) if item.get("role") == "user") + 1
    end = start
    while (
        end < len(items)
        and items[end].get("type") != "function_call_output"
        and items[end].get("role") != "user"
    ):
        end += 1
    return list(items[start:end])


async def test_gateway_runs_every_recorded_responses_stream_and_sends_the_reasoning_back(
    database_url: str,
) -> None:
    overrides = {"protocol": "responses"}
    async with running_stack(
        _script(RESPONSES_ANSWERS), database_url=database_url, reasoner_overrides=overrides
    ) as stack:
        for fixture in RESPONSES_ANSWERS:
            expect = fixture.expect
            stack.model.clear_requests()
            events = await stack.run(fixture.name, stream_mode=agent_pb2.STREAM_MODE_ALL_STEPS)
            final = final_of(events)
            started = [e.tool_start for e in events if e.WhichOneof("event") == "tool_start"]
            assert [(s.tool_call_id, s.name) for s in started] == [
                (c["id"], c["name"]) for c in expect["tool_calls"]
            ], fixture.name
            tokens = [
                e.llm_token for e in events if e.WhichOneof("event") == "llm_token" and e.llm_token.step == 0
            ]
            assert "".join(t.reasoning_token for t in tokens) == expect["reasoning"], fixture.name
            assert "".join(t.token for t in tokens) == expect["content"], fixture.name
            assert final.final_reply == ("Done." if expect["tool_calls"] else expect["content"]), fixture.name
            assert final.metadata.usage.reasoning_tokens == expect["usage"]["reasoning_tokens"], fixture.name
            assert list(final.metadata.models) == ["scripted"], fixture.name
            if expect["tool_calls"]:
                # The follow-up carries the turn back: reasoning items verbatim, with nothing stored.
                follow_up = stack.model.requests[1]
                assert (follow_up["store"], follow_up["include"]) == (False, ["reasoning.encrypted_content"])
                assert _assistant_items(follow_up) == _turn_items(fixture), fixture.name
            # A next run on the thread rebuilds the turn from the store and sends it back the same.
            stack.model.clear_requests()
            await stack.run(
                fixture.name, thread_id=events[0].thread_id, stream_mode=agent_pb2.STREAM_MODE_NONE
            )
            assert _assistant_items(stack.model.requests[0]) == _turn_items(fixture), fixture.name


def test_the_corpus_spans_enough_servers_and_shapes() -> None:
    every = fixtures()
    assert len(answers()) >= 20
    assert len({f.entry["provider"].split(" (")[0] for f in every}) >= 10
    assert all(f.entry["source"].get("url") or f.entry["source"].get("commit") for f in every)


def _chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    body = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "qwen2.5-coder:7b"}
    return (
        "data: "
        + json.dumps({**body, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        + "\n\n"
    )


def _piece(call_id: str | None, name: str | None, arguments: str) -> dict[str, Any]:
    call: dict[str, Any] = {"index": 0, "function": {"arguments": arguments}}
    if call_id:
        call.update(id=call_id, type="function")
        call["function"]["name"] = name
    return {"tool_calls": [call]}


# Parallel calls that all come at index 0, told apart by their ids, arguments in pieces: the shape
# reported for Ollama 0.20 (written for this test, not a recording).
REUSED_INDEX = Recording(
    headers=(("content-type", "text/event-stream"),),
    body=_chunk(_piece("call_a", "calculator", '{"expression": '))
    + _chunk(_piece(None, None, '"6 * 7"}'))
    + _chunk(_piece("call_b", "calculator", '{"expression": '))
    + _chunk(_piece(None, None, '"2 + 2"}'))
    + _chunk({}, "tool_calls")
    + "data: [DONE]\n\n",
)


async def test_parallel_calls_sent_at_one_index_both_run() -> None:
    script = Script(
        scenarios=(
            Scenario(match="", turns=(Turn(replay=REUSED_INDEX), Turn(content="{{tool:calculator}}"))),
        )
    )
    async with running_stack(script) as stack:
        events = await stack.run("Compute both.")
    ended = [e.tool_end.result for e in events if e.WhichOneof("event") == "tool_end"]
    assert sorted((r.tool_call_id, r.content, r.is_error) for r in ended) == [
        ("call_a", "42", False),
        ("call_b", "4", False),
    ]
    assert final_of(events).metadata.tool_calls == 2
