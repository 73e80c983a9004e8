"""How the Reasoner talks to a model endpoint: one request, answered whole or streamed.

`ModelProtocol` is the small interface the servicer calls: build a request body from the
contract's parameters, read the answer into a reader, make one request. Two implement it,
through the ``openai`` client (its transport, auth, SSE decoding and error types), with the
SDK's own retries off (the Reasoner's loop owns them, so one step makes at most its budget of
requests):

- `ChatCompletions`: ``POST /chat/completions`` on any OpenAI-compatible endpoint;
- `Responses`: ``POST /responses``, OpenAI's Responses API, with nothing stored server-side
  (reasoner_svc.responses_request, reasoner_svc.responses_reader).

Both answer with the same StepResult, so nothing past the Reasoner knows which one a model
speaks. The payload is already in the wire shape, so it goes through the client's `post` (the
SDK's documented path for raw bodies) rather than `chat.completions.create` or
`responses.create`, whose per-call recursive parameter transform costs time proportional to
the conversation length; answers are decoded JSON rather than pydantic models, which halves
the cost of a streamed call.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

import openai

from agentloop.v1 import reasoner_pb2
from reasoner_svc.assembly import AnswerReader
from reasoner_svc.convert import request_kwargs
from reasoner_svc.responses_reader import ResponsesReader
from reasoner_svc.responses_request import responses_body
from reasoner_svc.think_tags import ThinkMode


class ModelProtocol(Protocol):
    """One model request per call; failures are raised as they come (see endpoint_errors.classify)."""

    def body(self, params: reasoner_pb2.CompletionParams, model: str) -> dict[str, Any]:
        """The request body for `params`, sent to `model` (the endpoint's name for it)."""

    def reader(self, endpoint: str) -> AnswerReader:
        """A reader for one answer; `endpoint` names the endpoint in its errors."""

    async def complete(self, body: dict[str, Any], deadline: float, reader: AnswerReader) -> None:
        """Make one non-streamed request and fold its answer into `reader`."""

    def stream(
        self, body: dict[str, Any], deadline: float, reader: AnswerReader
    ) -> AsyncIterator[tuple[str, str]]:
        """Make one streamed request, folding it into `reader`; yields (reasoning, content) as they come."""


class ChatCompletions:
    """``POST /chat/completions`` on an OpenAI-compatible endpoint."""

    def __init__(
        self, client: openai.AsyncOpenAI, think: ThinkMode = ThinkMode.OFF, *, reasoning_effort: str = ""
    ) -> None:
        self._client = client
        self.think = think
        self._effort = reasoning_effort

    def body(self, params: reasoner_pb2.CompletionParams, model: str) -> dict[str, Any]:
        body = request_kwargs(params, model)
        body["model"] = model
        if self._effort:
            body["reasoning_effort"] = self._effort
        return body

    def reader(self, endpoint: str) -> AnswerReader:
        return AnswerReader(endpoint=endpoint, think=self.think)

    async def complete(self, body: dict[str, Any], deadline: float, reader: AnswerReader) -> None:
        reader.add_completion(await _post(self._client, "/chat/completions", body, deadline))

    def stream(
        self, body: dict[str, Any], deadline: float, reader: AnswerReader
    ) -> AsyncIterator[tuple[str, str]]:
        body = {**body, "stream": True, "stream_options": {"include_usage": True}}
        return _streamed(self._client, "/chat/completions", body, deadline, reader.add_chunk, reader.finish)


class Responses:
    """``POST /responses``: OpenAI's Responses API, reasoning carried encrypted across requests."""

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        think: ThinkMode = ThinkMode.OFF,
        *,
        encrypted_reasoning: bool = True,
        reasoning: dict[str, str] | None = None,
    ) -> None:
        self._client = client
        self.think = think
        self._encrypted = encrypted_reasoning
        self._reasoning = reasoning or None

    def body(self, params: reasoner_pb2.CompletionParams, model: str) -> dict[str, Any]:
        return responses_body(params, model, encrypted_reasoning=self._encrypted, reasoning=self._reasoning)

    def reader(self, endpoint: str) -> AnswerReader:
        return ResponsesReader(endpoint=endpoint, think=self.think)

    async def complete(self, body: dict[str, Any], deadline: float, reader: AnswerReader) -> None:
        _responses(reader).add_response(await _post(self._client, "/responses", body, deadline))

    def stream(
        self, body: dict[str, Any], deadline: float, reader: AnswerReader
    ) -> AsyncIterator[tuple[str, str]]:
        events = _responses(reader)
        body = {**body, "stream": True}
        return _streamed(self._client, "/responses", body, deadline, events.add_event, events.finish)


def _responses(reader: AnswerReader) -> ResponsesReader:
    if not isinstance(reader, ResponsesReader):
        raise TypeError("the Responses protocol reads with a ResponsesReader (from its reader())")
    return reader


async def _post(client: openai.AsyncOpenAI, path: str, body: dict[str, Any], deadline: float) -> Any:
    """One whole answer, as decoded JSON."""
    options: Any = {"timeout": _left(deadline), "max_retries": 0}
    # The client's timeout bounds each read; this bounds the whole call.
    async with asyncio.timeout_at(deadline):
        return await client.post(path, body=body, cast_to=dict, options=options)


async def _streamed(
    client: openai.AsyncOpenAI,
    path: str,
    body: dict[str, Any],
    deadline: float,
    fold: Callable[[Any], tuple[str, str]],
    finish: Callable[[], tuple[str, str]],
) -> AsyncIterator[tuple[str, str]]:
    """One streamed answer: each decoded event folded in as it comes, then the end."""
    options: Any = {"timeout": _left(deadline), "max_retries": 0}
    # The client's timeout bounds each read, so a trickling stream would never hit it: every
    # wait for the endpoint is also bounded by one deadline for the whole call.
    async with asyncio.timeout_at(deadline):
        stream = await client.post(
            path,
            body=body,
            cast_to=dict,
            options=options,
            stream=True,
            stream_cls=openai.AsyncStream[dict[str, Any]],
        )
    try:
        events = aiter(stream)
        while True:
            async with asyncio.timeout_at(deadline):
                event = await anext(events, None)
            if event is None:
                break
            yield fold(event)
        yield finish()
    finally:
        await stream.close()


def _left(deadline: float) -> float:
    return max(0.001, deadline - asyncio.get_running_loop().time())
