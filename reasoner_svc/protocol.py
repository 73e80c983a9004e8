"""How the Reasoner talks to a model endpoint: one request, answered whole or streamed.

`ModelProtocol` is the small interface the servicer calls; `ChatCompletions` implements it for
OpenAI-compatible ``/chat/completions`` through the ``openai`` client (its transport, auth, SSE
decoding and error types), with the SDK's own retries off: the Reasoner's `attempts` loop owns
them, so one step makes at most its budget of requests. Another wire protocol (a Responses API)
would be another implementation of the same two methods.

The payload is already in the wire shape, so it goes through the client's `post` (the SDK's
documented path for raw bodies) rather than `chat.completions.create`, whose per-call recursive
parameter transform costs time proportional to the conversation length; responses are decoded
JSON rather than pydantic models, which halves the cost of a streamed call.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, Protocol

import openai

from reasoner_svc.assembly import AnswerReader
from reasoner_svc.think_tags import ThinkMode


class ModelProtocol(Protocol):
    """One model request per call; failures are raised as they come (see endpoint_errors.classify)."""

    async def complete(self, body: dict[str, Any], deadline: float, reader: AnswerReader) -> None:
        """Make one non-streamed request and fold its answer into `reader`."""

    def stream(
        self, body: dict[str, Any], deadline: float, reader: AnswerReader
    ) -> AsyncIterator[tuple[str, str]]:
        """Make one streamed request, folding it into `reader`; yields (reasoning, content) as they come."""


class ChatCompletions:
    """``POST /chat/completions`` on an OpenAI-compatible endpoint."""

    def __init__(self, client: openai.AsyncOpenAI, think: ThinkMode = ThinkMode.OFF) -> None:
        self._client = client
        self.think = think

    async def complete(self, body: dict[str, Any], deadline: float, reader: AnswerReader) -> None:
        options: Any = {"timeout": _left(deadline), "max_retries": 0}
        # The client's timeout bounds each read; this bounds the whole call.
        async with asyncio.timeout_at(deadline):
            completion = await self._client.post(
                "/chat/completions", body=body, cast_to=dict, options=options
            )
        reader.add_completion(completion)

    async def stream(
        self, body: dict[str, Any], deadline: float, reader: AnswerReader
    ) -> AsyncIterator[tuple[str, str]]:
        body = {**body, "stream": True, "stream_options": {"include_usage": True}}
        options: Any = {"timeout": _left(deadline), "max_retries": 0}
        # The client's timeout bounds each read, so a trickling stream would never hit it: every
        # wait for the endpoint is also bounded by one deadline for the whole call.
        async with asyncio.timeout_at(deadline):
            stream = await self._client.post(
                "/chat/completions",
                body=body,
                cast_to=dict,
                options=options,
                stream=True,
                stream_cls=openai.AsyncStream[dict[str, Any]],
            )
        try:
            chunks = aiter(stream)
            while True:
                async with asyncio.timeout_at(deadline):
                    chunk = await anext(chunks, None)
                if chunk is None:
                    break
                yield reader.add_chunk(chunk)
            yield reader.finish()
        finally:
            await stream.close()


def _left(deadline: float) -> float:
    return max(0.001, deadline - asyncio.get_running_loop().time())
