"""The scripted model over real HTTP, driven by the real ``openai`` client."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import openai
import pytest
from openai import AsyncOpenAI

from agentloop.scripted_model import (
    DEMO_QUESTION,
    Fault,
    Latency,
    Recording,
    Scenario,
    Script,
    ScriptedModelServer,
    ScriptedToolCall,
    Turn,
)
from agentloop.scripted_model.cli import main, serve

pytestmark = pytest.mark.integration

TOOLS: list[Any] = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": {}}}}
    for name in ("calculator", "current_time")
]

THINKING = "Let me think this through carefully."
SCRIPT = Script(
    scenarios=(
        Scenario(
            name="parallel",
            match="multiply",
            turns=(
                Turn(
                    reasoning="Two independent lookups, so both at once.",
                    tool_calls=(
                        ScriptedToolCall("calculator", {"expression": "6 * 7", "precision": 2}),
                        ScriptedToolCall("current_time", {"timezone": "UTC"}),
                    ),
                ),
                Turn(content="The product is {{tool:calculator}} at {{tool:current_time}}."),
            ),
        ),
        Scenario(
            name="thinker",
            match="think",
            turns=(Turn(reasoning=THINKING, content="  Forty-two,\n is the answer. "),),
        ),
    )
)


def ask(text: str) -> list[Any]:
    return [{"role": "user", "content": text}]


async def drain(stream: Any, into: list[Any] | None = None) -> None:
    async for chunk in stream:
        if into is not None:
            into.append(chunk)


def extra(model: Any, key: str) -> Any:
    """Fields the SDK does not declare (like reasoning_content) land in pydantic's model_extra."""
    return (model.model_extra or {}).get(key)


@pytest.fixture
async def server() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer(SCRIPT) as srv:
        yield srv


@pytest.fixture
async def client(server: ScriptedModelServer) -> AsyncIterator[AsyncOpenAI]:
    openai_client = AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    yield openai_client
    await openai_client.close()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def test_non_stream_text_answer(client: AsyncOpenAI, server: ScriptedModelServer) -> None:
    completion = await client.chat.completions.create(model="my-model", messages=ask("hello there"))
    choice = completion.choices[0]
    assert choice.message.content == "You said: hello there"
    assert choice.message.tool_calls is None
    assert choice.finish_reason == "stop"
    assert completion.model == "my-model"
    assert completion.object == "chat.completion"
    assert completion.usage is not None
    assert completion.usage.prompt_tokens == 2
    assert completion.usage.completion_tokens == 4
    assert completion.usage.total_tokens == 6
    assert server.request_count == 1
    assert server.requests[0]["messages"] == ask("hello there")


async def test_non_stream_parallel_tool_calls(client: AsyncOpenAI) -> None:
    completion = await client.chat.completions.create(model="m", messages=ask("multiply please"), tools=TOOLS)
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    assert extra(choice.message, "reasoning_content") == "Two independent lookups, so both at once."
    calls = choice.message.tool_calls
    assert calls is not None
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [  # type: ignore[union-attr]
        ("calculator", {"expression": "6 * 7", "precision": 2}),
        ("current_time", {"timezone": "UTC"}),
    ]
    assert len({c.id for c in calls}) == 2
    assert completion.usage is not None
    details = completion.usage.completion_tokens_details
    assert details is not None
    assert details.reasoning_tokens == 7


async def test_agent_loop_feeds_tool_results_into_the_answer(client: AsyncOpenAI) -> None:
    messages: list[Any] = ask("multiply please")
    first = (await client.chat.completions.create(model="m", messages=messages, tools=TOOLS)).choices[0]
    assert first.message.tool_calls is not None
    messages.append(first.message.model_dump(exclude_none=True))
    results = {"calculator": "42", "current_time": "noon"}
    for call in first.message.tool_calls:
        name = call.function.name  # type: ignore[union-attr]
        messages.append({"role": "tool", "tool_call_id": call.id, "content": results[name]})
    final = (await client.chat.completions.create(model="m", messages=messages, tools=TOOLS)).choices[0]
    assert final.message.content == "The product is 42 at noon."
    assert final.finish_reason == "stop"


async def test_tool_turn_without_tools_offered_answers_in_text(client: AsyncOpenAI) -> None:
    completion = await client.chat.completions.create(model="m", messages=ask("multiply please"))
    assert completion.choices[0].message.tool_calls is None
    assert completion.choices[0].message.content == "I have to stop here; this is what I found so far."
    with_none = await client.chat.completions.create(
        model="m", messages=ask("multiply please"), tools=TOOLS, tool_choice="none"
    )
    assert with_none.choices[0].message.tool_calls is None


async def test_stream_reasoning_content_and_usage(client: AsyncOpenAI) -> None:
    stream = await client.chat.completions.create(
        model="m", messages=ask("think hard"), stream=True, stream_options={"include_usage": True}
    )
    reasoning: list[str] = []
    content: list[str] = []
    roles: list[str] = []
    finish: list[str] = []
    usage = None
    async for chunk in stream:
        assert chunk.object == "chat.completion.chunk"
        if not chunk.choices:
            usage = chunk.usage
            continue
        delta = chunk.choices[0].delta
        if delta.role:
            roles.append(delta.role)
        if piece := extra(delta, "reasoning_content"):
            reasoning.append(piece)
        if delta.content:
            content.append(delta.content)
        if chunk.choices[0].finish_reason:
            finish.append(chunk.choices[0].finish_reason)
    assert roles == ["assistant"]
    assert "".join(reasoning) == THINKING
    assert len(reasoning) == 6
    assert "".join(content) == "  Forty-two,\n is the answer. "
    assert len(content) == 4
    assert finish == ["stop"]
    assert usage is not None
    assert usage.completion_tokens == 10
    assert usage.completion_tokens_details is not None
    assert usage.completion_tokens_details.reasoning_tokens == 6
    assert usage.total_tokens == usage.prompt_tokens + 10


async def test_stream_tool_call_deltas_reassemble(client: AsyncOpenAI) -> None:
    stream = await client.chat.completions.create(
        model="m", messages=ask("multiply please"), tools=TOOLS, stream=True
    )
    calls: dict[int, dict[str, str]] = {}
    argument_deltas = 0
    finish = None
    async for chunk in stream:
        assert chunk.usage is None
        assert chunk.choices, "no usage chunk was asked for"
        for delta in chunk.choices[0].delta.tool_calls or []:
            call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
            call["id"] += delta.id or ""
            if delta.function is not None:
                call["name"] += delta.function.name or ""
                if delta.function.arguments:
                    argument_deltas += 1
                    call["arguments"] += delta.function.arguments
        finish = chunk.choices[0].finish_reason or finish
    assert finish == "tool_calls"
    assert sorted(calls) == [0, 1]
    assert calls[0]["name"] == "calculator"
    assert json.loads(calls[0]["arguments"]) == {"expression": "6 * 7", "precision": 2}
    assert calls[1]["name"] == "current_time"
    assert json.loads(calls[1]["arguments"]) == {"timezone": "UTC"}
    assert calls[0]["id"].startswith("call_0_0_")
    assert calls[1]["id"].startswith("call_0_1_")
    assert argument_deltas == 6  # each argument string arrives in three pieces

    plain = await client.chat.completions.create(model="m", messages=ask("multiply please"), tools=TOOLS)
    assert plain.choices[0].message.tool_calls is not None
    assert [c.id for c in plain.choices[0].message.tool_calls] == [calls[0]["id"], calls[1]["id"]]


async def test_status_faults_raise_the_sdk_errors_then_clear(
    client: AsyncOpenAI, server: ScriptedModelServer
) -> None:
    server.set_script(
        Script(
            faults=(Fault("status", status=500, times=2), Fault("status", status=429, message="slow down"))
        )
    )
    for stream in (False, True):
        with pytest.raises(openai.InternalServerError):
            await client.chat.completions.create(model="m", messages=ask("hi"), stream=stream)
    with pytest.raises(openai.RateLimitError, match="slow down") as rate_limited:
        await client.chat.completions.create(model="m", messages=ask("hi"))
    assert rate_limited.value.response.headers["retry-after"] == "0"
    assert rate_limited.value.code == "rate_limit_exceeded"
    assert server.pending_faults == 0
    recovered = await client.chat.completions.create(model="m", messages=ask("hi"))
    assert recovered.choices[0].message.content == "You said: hi"
    assert server.request_count == 4


async def test_malformed_json_faults(client: AsyncOpenAI, server: ScriptedModelServer) -> None:
    server.set_script(Script(faults=(Fault("malformed_json", times=2),)))
    with pytest.raises((ValueError, openai.APIError)):
        await client.chat.completions.create(model="m", messages=ask("hi"))
    stream = await client.chat.completions.create(model="m", messages=ask("hi"), stream=True)
    with pytest.raises((ValueError, openai.APIError)):
        await drain(stream)


async def test_broken_stream_faults(
    client: AsyncOpenAI, server: ScriptedModelServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    server.set_script(Script(faults=(Fault("broken_stream", times=2),)))
    stream = await client.chat.completions.create(model="m", messages=ask("hi"), stream=True)
    received: list[Any] = []
    with pytest.raises(openai.APIConnectionError):
        await drain(stream, received)
    assert len(received) == 2, "a couple of valid chunks arrive before the connection drops"
    with pytest.raises(openai.APIConnectionError):
        await client.chat.completions.create(model="m", messages=ask("hi"))
    after = await client.chat.completions.create(model="m", messages=ask("fine now"))
    assert after.choices[0].message.content == "You said: fine now"
    assert [r for r in caplog.records if r.name.startswith("aiohttp")] == []


async def test_api_key_is_enforced() -> None:
    async with ScriptedModelServer(SCRIPT, api_key="sekret") as srv:
        wrong = AsyncOpenAI(base_url=srv.base_url, api_key="nope", max_retries=0)
        right = AsyncOpenAI(base_url=srv.base_url, api_key="sekret", max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            await wrong.chat.completions.create(model="m", messages=ask("hi"))
        with pytest.raises(openai.AuthenticationError):
            await wrong.models.list()
        assert srv.request_count == 0
        answer = await right.chat.completions.create(model="m", messages=ask("hi"))
        assert answer.choices[0].message.content == "You said: hi"
        assert [model.id async for model in right.models.list()] == ["scripted"]
        await wrong.close()
        await right.close()


@pytest.mark.parametrize(
    ("messages", "param"),
    [([], "messages"), ([{"role": "wizard", "content": "x"}], "messages[0].role"), (["hi"], "messages[0]")],
)
async def test_invalid_requests_are_rejected(client: AsyncOpenAI, messages: list[Any], param: str) -> None:
    with pytest.raises(openai.BadRequestError, match=r"messages") as rejected:
        await client.chat.completions.create(model="m", messages=messages)
    assert rejected.value.param == param
    assert rejected.value.type == "invalid_request_error"


async def test_missing_messages_and_non_json_bodies(
    server: ScriptedModelServer, http: aiohttp.ClientSession
) -> None:
    url = f"{server.base_url}/chat/completions"
    async with http.post(url, json={"model": "m"}) as response:
        assert response.status == 400
        assert (await response.json())["error"]["param"] == "messages"
    async with http.post(url, data=b"not json", headers={"Content-Type": "application/json"}) as response:
        assert response.status == 400
        assert "JSON" in (await response.json())["error"]["message"]


async def test_control_routes(
    server: ScriptedModelServer, client: AsyncOpenAI, http: aiohttp.ClientSession
) -> None:
    root = server.base_url.removesuffix("/v1")
    async with http.get(f"{root}/healthz") as response:
        assert response.status == 200

    new_script = {"scenarios": [{"match": "ping", "turns": ["pong"]}], "latency": {"per_token_ms": 0}}
    async with http.put(f"{root}/_script", json=new_script) as response:
        assert response.status == 200
    pong = await client.chat.completions.create(model="m", messages=ask("ping"))
    assert pong.choices[0].message.content == "pong"
    async with http.get(f"{root}/_script") as response:
        assert Script.from_dict(await response.json()) == Script.from_dict(new_script)

    bad = {"scenarios": [{"match": "x", "turns": [{"tool_calls": [{"name": ""}]}]}]}
    async with http.put(f"{root}/_script", json=bad) as response:
        assert response.status == 400
        assert "scenarios[0].turns[0].tool_calls[0].name" in (await response.json())["error"]["message"]
    assert server.script.scenarios[0].match == "ping", "a rejected script leaves the old one in place"

    await client.chat.completions.create(model="m", messages=ask("second"), temperature=0.5)
    async with http.get(f"{root}/_requests") as response:
        recorded = await response.json()
    assert [body["messages"][0]["content"] for body in recorded] == ["ping", "second"]
    assert recorded[1]["temperature"] == 0.5
    async with http.delete(f"{root}/_requests") as response:
        assert (await response.json()) == {"cleared": 2}
    assert server.requests == []


async def test_fifty_concurrent_streams(client: AsyncOpenAI) -> None:
    async def one(index: int) -> tuple[str, int]:
        stream = await client.chat.completions.create(
            model="m",
            messages=ask(f"question number {index} of many"),
            stream=True,
            stream_options={"include_usage": True},
        )
        text: list[str] = []
        total = 0
        async for chunk in stream:
            if chunk.choices:
                text.append(chunk.choices[0].delta.content or "")
            elif chunk.usage is not None:
                total = chunk.usage.completion_tokens
        return "".join(text), total

    results = await asyncio.gather(*(one(i) for i in range(60)))
    assert results == [(f"You said: question number {i} of many", 7) for i in range(60)]


async def test_latency_is_simulated(client: AsyncOpenAI, server: ScriptedModelServer) -> None:
    slow = Scenario(match="", turns=(Turn(content="one two three four five"),))
    server.set_script(Script(scenarios=(slow,), latency=Latency(first_token_ms=50, per_token_ms=25)))
    started = time.perf_counter()
    stream = await client.chat.completions.create(model="m", messages=ask("x"), stream=True)
    arrivals = []
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            arrivals.append(time.perf_counter() - started)
    assert len(arrivals) == 5
    assert arrivals[0] >= 0.045
    assert arrivals[-1] - arrivals[0] >= 4 * 0.025 * 0.9

    started = time.perf_counter()
    await client.chat.completions.create(model="m", messages=ask("x"))
    assert time.perf_counter() - started >= (0.050 + 4 * 0.025) * 0.9


async def test_streamed_pieces_keep_their_schedule_when_the_loop_is_late(
    client: AsyncOpenAI, server: ScriptedModelServer
) -> None:
    """Pieces are due at fixed times from the start: a late wake-up delays one piece, not all after it."""
    answer = Scenario(match="", turns=(Turn(content=" ".join(["word"] * 30)),))
    server.set_script(Script(scenarios=(answer,), latency=Latency(first_token_ms=20, per_token_ms=20)))
    started = time.perf_counter()
    stream = await client.chat.completions.create(model="m", messages=ask("x"), stream=True)
    pieces = 0
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            pieces += 1
            if pieces in (5, 10, 15):
                time.sleep(0.1)  # noqa: ASYNC251 - the whole loop (the server's too) stalls, as on a busy machine
    elapsed = time.perf_counter() - started
    scheduled = 0.020 + 29 * 0.020
    assert pieces == 30
    # The stalls fall inside the schedule and are caught up; had each pushed every later
    # piece back, the stream would take at least scheduled + 0.3 s.
    assert elapsed < scheduled + 0.15, elapsed


async def test_client_disconnect_mid_stream_is_quiet(
    client: AsyncOpenAI, server: ScriptedModelServer, caplog: pytest.LogCaptureFixture
) -> None:
    long_answer = Scenario(match="", turns=(Turn(content=" ".join(["word"] * 40)),))
    server.set_script(Script(scenarios=(long_answer,), latency=Latency(per_token_ms=10)))
    caplog.set_level(logging.WARNING)
    stream = await client.chat.completions.create(model="m", messages=ask("x"), stream=True)
    async for _ in stream:
        break
    await stream.close()
    await asyncio.sleep(0.1)  # let the server hit the closed socket

    server.set_script(Script())
    answer = await client.chat.completions.create(model="m", messages=ask("still there?"))
    assert answer.choices[0].message.content == "You said: still there?"
    assert [r for r in caplog.records if r.name.startswith("aiohttp")] == []


async def test_serve_announces_and_stops() -> None:
    lines: list[str] = []
    stop = asyncio.Event()
    task = asyncio.create_task(serve(port=0, stop=stop, announce=lines.append))
    for _ in range(200):
        if lines or task.done():
            break
        await asyncio.sleep(0.01)
    assert len(lines) == 1
    assert lines[0].startswith("scripted model listening on http://127.0.0.1:")
    base_url = lines[0].rsplit(" ", 1)[1]
    async with AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0) as demo_client:
        tools: list[Any] = [
            {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
            for n in ("calculator", "current_time")
        ]
        answer = await demo_client.chat.completions.create(
            model="m", messages=ask(DEMO_QUESTION), tools=tools
        )
        calls = answer.choices[0].message.tool_calls or []
        assert [c.function.name for c in calls] == ["calculator", "current_time"]  # type: ignore[union-attr]
    stop.set()
    await asyncio.wait_for(task, timeout=5)


def test_main_rejects_a_bad_script_file(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"scenarios": [{"turns": []}]}', encoding="utf-8")
    assert main(["--script", str(path), "--port", "0"]) == 2
    assert "scenarios[0].turns" in capsys.readouterr().err


async def test_a_replayed_recording_arrives_byte_for_byte_with_its_headers(
    server: ScriptedModelServer, http: aiohttp.ClientSession
) -> None:
    body = (
        ": PROCESSING\n\n"
        'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n'
        'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        "data: [DONE]\n\n"
    )
    transcript = f"HTTP 200\ncontent-type: text/event-stream\nx-request-id: req_1\n\n{body}"
    script = {"scenarios": [{"match": "replay", "turns": [{"replay": transcript}]}]}
    async with http.put(f"{server.base_url.removesuffix('/v1')}/_script", json=script) as put:
        assert put.status == 200
    request = {"model": "m", "messages": ask("replay please"), "stream": False}
    async with http.post(f"{server.base_url}/chat/completions", json=request) as response:
        assert response.status == 200
        assert response.headers["x-request-id"] == "req_1"
        pieces = [piece async for piece in response.content.iter_any()]
    assert b"".join(pieces).decode() == body


async def test_a_replayed_error_keeps_its_status_headers_and_body(
    server: ScriptedModelServer, http: aiohttp.ClientSession
) -> None:
    error = Recording(
        status=429, headers=(("content-type", "text/html"), ("retry-after", "7")), body="<b>slow</b>"
    )
    server.set_script(Script(scenarios=(Scenario(match="", turns=(Turn(replay=error),)),)))
    request = {"model": "m", "messages": ask("anything")}
    for _ in range(2):  # the only turn repeats: a persistent error
        async with http.post(f"{server.base_url}/chat/completions", json=request) as response:
            assert (response.status, response.headers["retry-after"]) == (429, "7")
            assert response.headers["content-type"].startswith("text/html")
            assert await response.text() == "<b>slow</b>"
    assert server.request_count == 2
