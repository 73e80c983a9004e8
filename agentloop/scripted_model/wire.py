"""OpenAI chat-completions wire format: response bodies, stream chunks and error bodies.

Kept apart from the HTTP server so the exact bytes a real client must parse live in one place.
The server is used in benchmarks, so chunks are assembled from a per-response prefix and a
single ``json.dumps`` of the delta instead of serialising a full object per chunk.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentloop.scripted_model.messages import message_text
from agentloop.scripted_model.script import Turn

_PIECE = re.compile(r"\s*\S+\s*")
_ARGUMENT_PIECES = 3

DONE = b"data: [DONE]\n\n"


def split_text(text: str) -> list[str]:
    """Word-sized pieces that join back to ``text`` exactly (leading whitespace rides on the first)."""
    if not text:
        return []
    return _PIECE.findall(text) or [text]


def split_arguments(arguments: str, parts: int = _ARGUMENT_PIECES) -> list[str]:
    """Roughly equal slices, so clients must concatenate argument deltas like with a real model."""
    if not arguments:
        return []
    size = -(-len(arguments) // parts)
    return [arguments[start : start + size] for start in range(0, len(arguments), size)]


def prompt_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """A deterministic stand-in for tokenisation: whitespace-separated words in all message contents."""
    return sum(len(message_text(message).split()) for message in messages)


def usage(prompt: int, completion: int, reasoning: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }


def error_body(message: str, error_type: str, code: str | None = None, param: str | None = None) -> bytes:
    return json.dumps(
        {"error": {"message": message, "type": error_type, "param": param, "code": code}}
    ).encode()


@dataclass(slots=True)
class Pieces:
    """What the model "generates" for one turn, cut the way a stream delivers it.

    Both response modes count tokens from these pieces so that streamed and non-streamed usage agree.
    """

    reasoning: list[str]
    content: list[str]
    tool_calls: list[tuple[str, str, str, list[str]]]  # (id, name, arguments, argument pieces)

    @classmethod
    def of(cls, turn: Turn) -> Pieces:
        calls = []
        for call in turn.tool_calls:
            arguments = call.arguments_json()
            calls.append((call.id or "", call.name, arguments, split_arguments(arguments)))
        return cls(split_text(turn.reasoning), split_text(turn.content), calls)

    @property
    def completion_tokens(self) -> int:
        """One per streamed piece, plus one per tool call for its name."""
        return len(self.reasoning) + len(self.content) + sum(1 + len(call[3]) for call in self.tool_calls)


def completion_body(
    turn: Turn, pieces: Pieces, *, completion_id: str, created: int, model: str, prompt: int
) -> bytes:
    """A non-streamed ``chat.completion`` object, serialised."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": turn.content if turn.content or not turn.tool_calls else None,
        "refusal": None,
    }
    if turn.reasoning:
        message["reasoning_content"] = turn.reasoning
    if pieces.tool_calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
            for call_id, name, arguments, _ in pieces.tool_calls
        ]
    body = {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": turn.finish_reason}],
        "usage": usage(prompt, pieces.completion_tokens, len(pieces.reasoning)),
    }
    return json.dumps(body, ensure_ascii=False).encode()


@dataclass(slots=True)
class StreamEvents:
    """The SSE events of one streamed response, grouped by where simulated latency applies.

    ``tokens`` are the generated pieces (latency goes before each); ``head`` and ``tail`` are
    bookkeeping chunks a real server sends without delay.
    """

    head: bytes
    tokens: list[bytes]
    tail: bytes

    def joined(self) -> bytes:
        return self.head + b"".join(self.tokens) + self.tail


def stream_events(
    turn: Turn,
    pieces: Pieces,
    *,
    completion_id: str,
    created: int,
    model: str,
    prompt: int,
    include_usage: bool,
) -> StreamEvents:
    """The ``chat.completion.chunk`` events of a streamed answer, ending with ``[DONE]``."""
    dumps = json.dumps
    envelope = (
        f'"id":"{completion_id}","object":"chat.completion.chunk","created":{created},"model":{dumps(model)}'
    )
    prefix = (
        "data: {" + envelope + (',"usage":null' if include_usage else "") + ',"choices":[{"index":0,"delta":'
    )

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        finish = "null" if finish_reason is None else dumps(finish_reason)
        return (
            prefix
            + dumps(delta, ensure_ascii=False)
            + ',"logprobs":null,"finish_reason":'
            + finish
            + "}]}\n\n"
        ).encode()

    tokens = [chunk({"reasoning_content": piece}) for piece in pieces.reasoning]
    tokens += [chunk({"content": piece}) for piece in pieces.content]
    for index, (call_id, name, _, argument_pieces) in enumerate(pieces.tool_calls):
        opening = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        tokens.append(chunk({"tool_calls": [opening]}))
        tokens += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in argument_pieces
        ]

    tail = chunk({}, turn.finish_reason or "stop")
    if include_usage:
        totals = dumps(usage(prompt, pieces.completion_tokens, len(pieces.reasoning)))
        tail += ("data: {" + envelope + ',"choices":[],"usage":' + totals + "}\n\n").encode()
    return StreamEvents(head=chunk({"role": "assistant", "content": ""}), tokens=tokens, tail=tail + DONE)
