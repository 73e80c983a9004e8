"""OpenAI Responses API wire format (``POST /v1/responses``): events, bodies, and reading the input.

A scripted turn is answered as OpenAI's Responses API answers: output items — ``reasoning``
(its summary, and with ``include: ["reasoning.encrypted_content"]`` an encrypted content to
send back), ``message`` (text), one ``function_call`` per call — streamed as typed SSE events
(``event: response.output_text.delta`` / ``data: {...}``) or whole. The request's input items
are read back into chat-shaped messages so the script picks its turn exactly as for chat
completions: an assistant turn is its reasoning, message and function-call items together,
a ``function_call_output`` a tool message.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentloop.scripted_model.script import Turn
from agentloop.scripted_model.wire import Pieces, StreamEvents

ENCRYPTED_REASONING = "reasoning.encrypted_content"
_ASSISTANT_ITEMS = frozenset({"reasoning", "function_call"})
_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})
_ROLES = frozenset({"system", "developer", "user", "assistant"})


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, Mapping) and p.get("type") in _TEXT_PARTS]
        return "".join(p for p in parts if isinstance(p, str))
    return ""


def input_problem(body: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first thing wrong with a Responses body's input, as (param, message), or None."""
    items = body.get("input")
    if isinstance(items, str):
        return None
    if not isinstance(items, list) or not items:
        return "input", "'input' must be a string or a non-empty array of input items."
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            return f"input[{index}]", f"'input[{index}]' must be an object."
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") not in _ROLES:
            return (
                f"input[{index}].role",
                f"Invalid value for 'input[{index}].role': {item.get('role')!r}. "
                f"Supported values are: {', '.join(sorted(_ROLES))}.",
            )
        if kind in ("function_call", "function_call_output") and not isinstance(item.get("call_id"), str):
            return f"input[{index}].call_id", f"Missing required parameter: 'input[{index}].call_id'."
    return None


def messages_from_input(items: Any) -> list[dict[str, Any]]:
    """The request's input items as chat messages: what the script reads to choose its turn.

    Consecutive reasoning, assistant message and function-call items are one assistant turn
    (its text and its calls); a function_call_output is a tool message.
    """
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    messages: list[dict[str, Any]] = []
    turn: dict[str, Any] | None = None
    for item in items:
        kind = item.get("type", "message")
        role = item.get("role")
        if kind in _ASSISTANT_ITEMS or (kind == "message" and role == "assistant"):
            if turn is None:
                turn = {"role": "assistant", "content": ""}
                messages.append(turn)
            if kind == "message":
                turn["content"] += _text(item.get("content"))
            elif kind == "function_call":
                call = {"id": item.get("call_id"), "type": "function"}
                call["function"] = {"name": item.get("name", ""), "arguments": item.get("arguments", "")}
                turn.setdefault("tool_calls", []).append(call)
            continue
        turn = None
        if kind == "function_call_output":
            output = item.get("output")
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": _text(output)})
        elif kind == "message":
            messages.append({"role": role, "content": _text(item.get("content"))})
    return messages


def responses_usage(prompt: int, completion: int, reasoning: int) -> dict[str, Any]:
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": prompt + completion,
    }


@dataclass
class Issued:
    """What one answer handed out: its reasoning item and the items made with it (for the check)."""

    reasoning_id: str = ""
    encrypted: str = ""
    made_with: list[str] = field(default_factory=list)


@dataclass
class ResponseWriter:
    """One answer's items and events; ``n`` makes its ids unique on the server."""

    turn: Turn
    pieces: Pieces
    n: int
    created: int
    model: str
    prompt: int
    encrypted: bool
    _sequence: int = 0

    @property
    def response_id(self) -> str:
        return f"resp_scripted_{self.n}"

    def issued(self) -> Issued:
        if not self.pieces.reasoning or not self.encrypted:
            return Issued()
        made = ([f"msg_scripted_{self.n}"] if self.pieces.content else []) + [
            f"fc_scripted_{self.n}_{i}" for i in range(len(self.pieces.tool_calls))
        ]
        return Issued(self._reasoning_id(), self._encrypted_content(), made)

    def _reasoning_id(self) -> str:
        return f"rs_scripted_{self.n}"

    def _encrypted_content(self) -> str:
        digest = hashlib.sha256(f"{self.n}\x00{self.turn.reasoning}".encode()).hexdigest()
        return "enc_" + base64.urlsafe_b64encode(f"scripted:{self.n}:{digest}".encode()).decode()

    def _response(
        self, status: str, output: list[dict[str, Any]], usage: dict[str, Any] | None
    ) -> dict[str, Any]:
        return {
            "id": self.response_id,
            "object": "response",
            "created_at": self.created,
            "status": status,
            "error": None,
            "incomplete_details": None,
            "model": self.model,
            "output": output,
            "parallel_tool_calls": True,
            "store": not self.encrypted,
            "usage": usage,
        }

    def _usage(self) -> dict[str, Any]:
        return responses_usage(self.prompt, self.pieces.completion_tokens, len(self.pieces.reasoning))

    def _items(self) -> list[dict[str, Any]]:
        """The finished output items."""
        items: list[dict[str, Any]] = []
        if self.pieces.reasoning:
            items.append(self._reasoning_item(self.turn.reasoning))
        if self.pieces.content:
            items.append(self._message_item(self.turn.content, "completed"))
        for i, (call_id, name, arguments, _) in enumerate(self.pieces.tool_calls):
            items.append(self._call_item(i, call_id, name, arguments, "completed"))
        return items

    def _reasoning_item(self, summary: str | None) -> dict[str, Any]:
        item: dict[str, Any] = {"id": self._reasoning_id(), "type": "reasoning", "summary": []}
        if summary is not None:
            item["summary"] = [{"type": "summary_text", "text": summary}]
        if self.encrypted:
            item["encrypted_content"] = self._encrypted_content()
        return item

    def _message_item(self, text: str | None, status: str) -> dict[str, Any]:
        content = [] if text is None else [{"type": "output_text", "annotations": [], "text": text}]
        return {
            "id": f"msg_scripted_{self.n}",
            "type": "message",
            "status": status,
            "role": "assistant",
            "content": content,
        }

    def _call_item(self, i: int, call_id: str, name: str, arguments: str, status: str) -> dict[str, Any]:
        return {
            "id": f"fc_scripted_{self.n}_{i}",
            "type": "function_call",
            "status": status,
            "arguments": arguments,
            "call_id": call_id,
            "name": name,
        }

    def body(self) -> bytes:
        """The whole response object of a non-streamed request."""
        return json.dumps(
            self._response("completed", self._items(), self._usage()), ensure_ascii=False
        ).encode()

    def _event(self, kind: str, **payload: Any) -> bytes:
        data = {"type": kind, "sequence_number": self._sequence, **payload}
        self._sequence += 1
        return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()

    def events(self) -> StreamEvents:
        """The events of a streamed answer, in the order OpenAI sends them."""
        head = self._event("response.created", response=self._response("in_progress", [], None))
        head += self._event("response.in_progress", response=self._response("in_progress", [], None))
        tokens: list[bytes] = []
        index = 0
        if self.pieces.reasoning:
            item_id = self._reasoning_id()
            opening = self._event(
                "response.output_item.added", output_index=index, item=self._reasoning_item(None)
            )
            opening += self._event(
                "response.reasoning_summary_part.added",
                item_id=item_id,
                output_index=index,
                summary_index=0,
                part={"type": "summary_text", "text": ""},
            )
            for position, piece in enumerate(self.pieces.reasoning):
                event = self._event(
                    "response.reasoning_summary_text.delta",
                    item_id=item_id,
                    output_index=index,
                    summary_index=0,
                    delta=piece,
                )
                tokens.append(opening + event if position == 0 else event)
            text = self.turn.reasoning
            closing = self._event(
                "response.reasoning_summary_text.done",
                item_id=item_id,
                output_index=index,
                summary_index=0,
                text=text,
            )
            closing += self._event(
                "response.reasoning_summary_part.done",
                item_id=item_id,
                output_index=index,
                summary_index=0,
                part={"type": "summary_text", "text": text},
            )
            closing += self._event(
                "response.output_item.done", output_index=index, item=self._reasoning_item(text)
            )
            tokens[-1] += closing
            index += 1
        if self.pieces.content:
            item_id = f"msg_scripted_{self.n}"
            opening = self._event(
                "response.output_item.added", output_index=index, item=self._message_item(None, "in_progress")
            )
            part = {"type": "output_text", "annotations": [], "text": ""}
            opening += self._event(
                "response.content_part.added", item_id=item_id, output_index=index, content_index=0, part=part
            )
            for position, piece in enumerate(self.pieces.content):
                event = self._event(
                    "response.output_text.delta",
                    item_id=item_id,
                    output_index=index,
                    content_index=0,
                    delta=piece,
                    logprobs=[],
                )
                tokens.append(opening + event if position == 0 else event)
            text = self.turn.content
            closing = self._event(
                "response.output_text.done",
                item_id=item_id,
                output_index=index,
                content_index=0,
                text=text,
                logprobs=[],
            )
            closing += self._event(
                "response.content_part.done",
                item_id=item_id,
                output_index=index,
                content_index=0,
                part={**part, "text": text},
            )
            closing += self._event(
                "response.output_item.done", output_index=index, item=self._message_item(text, "completed")
            )
            tokens[-1] += closing
            index += 1
        for i, (call_id, name, arguments, argument_pieces) in enumerate(self.pieces.tool_calls):
            item_id = f"fc_scripted_{self.n}_{i}"
            tokens.append(
                self._event(
                    "response.output_item.added",
                    output_index=index,
                    item=self._call_item(i, call_id, name, "", "in_progress"),
                )
            )
            tokens += [
                self._event(
                    "response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=piece
                )
                for piece in argument_pieces
            ]
            closing = self._event(
                "response.function_call_arguments.done",
                item_id=item_id,
                output_index=index,
                arguments=arguments,
            )
            closing += self._event(
                "response.output_item.done",
                output_index=index,
                item=self._call_item(i, call_id, name, arguments, "completed"),
            )
            tokens[-1] += closing
            index += 1
        tail = self._event(
            "response.completed", response=self._response("completed", self._items(), self._usage())
        )
        return StreamEvents(head=head, tokens=tokens, tail=tail)


def error_event(code: str, message: str, sequence: int = 2) -> bytes:
    """An ``error`` event as the Responses API streams it (then it ends the stream)."""
    data = {"type": "error", "code": code, "message": message, "param": None, "sequence_number": sequence}
    return f"event: error\ndata: {json.dumps(data)}\n\n".encode()


def reasoning_problem(items: Any, store: bool, issued: Mapping[str, Issued]) -> str | None:
    """What OpenAI would refuse in a follow-up's reasoning items, or None.

    `issued` maps every item id this server handed out with reasoning (the reasoning item's
    own id and the ids of the items made with it) to what it handed out. With nothing stored,
    a reasoning item it handed out must come back with its encrypted content unchanged, and an
    item made with reasoning must come after its reasoning item. Items of other servers (a
    replayed recording's) are not checked.
    """
    if not isinstance(items, Sequence) or isinstance(items, str):
        return None
    seen: set[str] = set()
    for item in items:
        if not isinstance(item, Mapping):
            continue
        item_id = item.get("id")
        if not isinstance(item_id, str):
            if item.get("type") not in _ASSISTANT_ITEMS and item.get("role") != "assistant":
                seen.clear()
            continue
        if item.get("type") == "reasoning":
            known = issued.get(item_id)
            encrypted = item.get("encrypted_content")
            if known is not None and encrypted is None and not store:
                return (
                    f"Item with id '{item_id}' not found. Items are not persisted when `store` is set to "
                    "false. Try again with `store` set to true, or remove this item from your input."
                )
            if known is not None and encrypted != known.encrypted:
                return f"The encrypted content for item {item_id} could not be verified."
            seen.add(item_id)
            continue
        known = issued.get(item_id)
        if known is not None and known.reasoning_id not in seen:
            kind = item.get("type", "message")
            return (
                f"Item '{item_id}' of type '{kind}' was provided without its required 'reasoning' item: "
                f"'{known.reasoning_id}'."
            )
    return None
