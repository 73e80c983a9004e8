"""Reading what an OpenAI Responses API endpoint answers, streamed event by event or whole.

A Responses answer is a list of output items — ``message`` (text parts), ``reasoning`` (a
summary, raw reasoning text and, with ``include: ["reasoning.encrypted_content"]``, the
encrypted reasoning to send back), ``function_call`` (one call each) — and a stream is typed
events about them (``response.output_item.added`` / ``.done``, ``response.output_text.delta``,
``response.reasoning_summary_text.delta``, ``response.reasoning_text.delta``,
``response.function_call_arguments.delta`` / ``.done``, ``response.completed`` with usage,
``response.failed``, ``error``). Events name their item by ``output_index`` and ``item_id``, so
parallel calls stay apart whichever way their events interleave.

Servers differ here too: some stream no argument deltas and put the arguments in
``.done`` or the finished item only; some send reasoning as raw ``reasoning_text``; the
item's final encrypted content may differ from the one in ``output_item.added``. The finished
item and ``response.completed``'s output are authoritative.

`ResponsesReader` folds either form into the same ``StepResult`` as the chat-completions reader
(reasoner_svc.assembly): text, reasoning (summaries and raw reasoning text), tool calls and
usage; the turn's output items are kept as provider fields (reasoner_svc.responses_request says
how they are sent back).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agentloop.v1 import reasoner_pb2
from reasoner_svc.assembly import (
    AnswerReader,
    EndpointError,
    MalformedAnswer,
    _Call,
    _kind,
    endpoint_error,
    usage_from_openai,
)
from reasoner_svc.convert import OUTPUT_FIELD

_MODELLED = frozenset({"message", "function_call"})
"""Item types whose content the contract holds (text, calls); only a marker of each is kept."""
_REASONING_DELTAS = frozenset({"response.reasoning_summary_text.delta", "response.reasoning_text.delta"})
_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}


def _text_of(parts: Any, kinds: frozenset[str]) -> str:
    """The text of the parts of `kinds` in a list of content or summary parts."""
    if not isinstance(parts, list):
        return ""
    out = []
    for part in parts:
        if isinstance(part, dict) and part.get("type") in kinds:
            text = part.get("text", part.get("refusal"))
            if isinstance(text, str):
                out.append(text)
    return "".join(out)


_ANSWER_PARTS = frozenset({"output_text", "refusal", "text"})
_SUMMARY_PARTS = frozenset({"summary_text"})
_REASONING_PARTS = frozenset({"reasoning_text"})


@dataclass
class ResponsesReader(AnswerReader):
    """Folds a Responses API answer (events or the whole response object) into a StepResult."""

    _items: dict[int, dict[str, Any]] = field(default_factory=dict)
    """Finished output items by output_index (markers for message and function_call items)."""
    _by_item: dict[str, _Call] = field(default_factory=dict)
    _streamed: set[str] = field(default_factory=set)
    """Items whose text or reasoning arrived in deltas (their finished form adds nothing to show)."""
    ended: bool = False
    """Whether the answer's last event (completed or incomplete) arrived."""

    # --- streamed answers --------------------------------------------------------------------

    def add_event(self, event: Any) -> tuple[str, str]:
        """Fold one stream event in; returns the (reasoning, content) text it adds."""
        if not isinstance(event, dict):
            raise MalformedAnswer(
                f"{self.endpoint} sent a stream event that is {_kind(event)}, not a JSON object"
            )
        kind = event.get("type")
        if kind == "response.output_text.delta" or kind == "response.refusal.delta":
            self._streamed.add(str(event.get("item_id", "")))
            return self._emit("", self._delta(event))
        if kind in _REASONING_DELTAS:
            self._streamed.add(str(event.get("item_id", "")))
            return self._emit(self._delta(event), "")
        if kind == "response.function_call_arguments.delta":
            piece = self._delta(event)
            self._call_of(event).arguments.append(piece)
            self.size += len(piece.encode())
            return "", ""
        if kind == "response.function_call_arguments.done":
            arguments = event.get("arguments")
            if isinstance(arguments, str):
                self._set_arguments(self._call_of(event), arguments)
            return "", ""
        if kind == "response.output_item.added":
            self._open(self._item(event), event.get("output_index"))
            return "", ""
        if kind == "response.output_item.done":
            return self._close(self._item(event), event.get("output_index"))
        if kind in ("response.completed", "response.incomplete"):
            return self._end(event.get("response"))
        if kind in ("response.created", "response.in_progress"):
            response = event.get("response")
            if isinstance(response, dict) and isinstance(response.get("model"), str):
                self.model = response["model"]
            return "", ""
        if kind == "response.failed":
            response = event.get("response")
            error = response.get("error") if isinstance(response, dict) else None
            raise endpoint_error(error or "the endpoint reported that the response failed")
        if kind == "error":
            raise endpoint_error(event.get("error") or event)
        if not isinstance(kind, str):
            raise MalformedAnswer(f"{self.endpoint} sent a stream event without a type")
        return "", ""  # parts opening and closing, annotations, hosted tools: nothing to fold

    def _delta(self, event: dict[str, Any]) -> str:
        delta = event.get("delta")
        if not isinstance(delta, str):
            raise MalformedAnswer(
                f"{self.endpoint} sent a {event.get('type')} event whose delta is {_kind(delta)}"
            )
        return delta

    def _item(self, event: dict[str, Any]) -> dict[str, Any]:
        item = event.get("item")
        if not isinstance(item, dict):
            raise MalformedAnswer(
                f"{self.endpoint} sent a {event.get('type')} event whose item is {_kind(item)}"
            )
        return item

    def _call_of(self, event: dict[str, Any]) -> _Call:
        """The call an arguments event is about: by item id, else by output index (opened if new)."""
        item_id = event.get("item_id")
        call = self._by_item.get(item_id) if isinstance(item_id, str) else None
        if call is None:
            index = event.get("output_index")
            call = next((c for c in self.calls if c.index == index), None) if index is not None else None
        if call is None:
            call = self._open({"type": "function_call", "id": item_id or ""}, event.get("output_index"))
        return call

    def _open(self, item: dict[str, Any], index: Any) -> _Call:
        """Start following an item; a function call becomes a call of the answer."""
        if item.get("type") != "function_call":
            return _Call(index=index)
        item_id = item.get("id") if isinstance(item.get("id"), str) else ""
        call = self._by_item.get(item_id) if item_id else None
        if call is None and isinstance(index, int):
            call = next((c for c in self.calls if c.index == index), None)  # a server without item ids
        if call is None:
            call = _Call(index=index if isinstance(index, int) else len(self.calls))
            self.calls.append(call)
            if item_id:
                self._by_item[item_id] = call
        self._name(call, item)
        arguments = item.get("arguments")
        if isinstance(arguments, str) and arguments and not call.arguments:
            self._set_arguments(call, arguments)
        return call

    def _name(self, call: _Call, item: dict[str, Any]) -> None:
        call_id, name = item.get("call_id"), item.get("name")
        if isinstance(call_id, str) and call_id and not call.id:
            call.id = call_id
        if isinstance(name, str) and name and not call.name:
            call.name = name
            self.size += len(name.encode())

    def _set_arguments(self, call: _Call, arguments: str) -> None:
        """The call's whole arguments (a done event or a finished item): they replace the deltas."""
        held = "".join(call.arguments)
        if held != arguments:
            self.size += len(arguments.encode()) - len(held.encode())
            call.arguments = [arguments]

    def _close(self, item: dict[str, Any], index: Any) -> tuple[str, str]:
        """A finished item: kept for the next request, its text shown if no delta showed it."""
        kind = item.get("type")
        if not isinstance(index, int):
            index = len(self._items)
        item_id = str(item.get("id", ""))
        shown = item_id in self._streamed
        if kind == "function_call":
            call = self._open(item, index)
            arguments = item.get("arguments")
            if isinstance(arguments, str):
                self._set_arguments(call, arguments)
            self._keep(index, _marker(item, ("name", "arguments")))
            return "", ""
        if item_id:
            self._streamed.add(item_id)  # shown now: a second finished form adds nothing to show
        if kind == "message":
            self._keep(index, _marker(item, ("content",)))
            return ("", "") if shown else self._emit("", _text_of(item.get("content"), _ANSWER_PARTS))
        self._keep(index, item)
        if kind == "reasoning" and not shown:
            summary = _text_of(item.get("summary"), _SUMMARY_PARTS) or _text_of(
                item.get("content"), _REASONING_PARTS
            )
            return self._emit(summary, "")
        return "", ""

    def _keep(self, index: int, item: dict[str, Any]) -> None:
        """Keep a finished item at its place; one kept verbatim counts towards the provider fields."""
        old = self._items.get(index)
        if old is not None and old.get("type") not in _MODELLED:
            size = _size(old)
            self.size -= size
            self.provider_size -= size
        self._items[index] = item
        if item.get("type") not in _MODELLED:
            size = _size(item)
            self.size += size
            self.provider_size += size

    def _end(self, response: Any) -> tuple[str, str]:
        """The last event: usage, the finish reason, and the output as the endpoint holds it."""
        if not isinstance(response, dict):
            raise MalformedAnswer(f"{self.endpoint} ended the answer without its response object")
        self.ended = True
        reasoning = content = ""
        output = response.get("output")
        if isinstance(output, list):
            for index, item in enumerate(output):
                if not isinstance(item, dict):
                    continue
                known = self._items.get(index)
                # The finished output is authoritative: newer encrypted content, items a server
                # announced only here.
                if known is None or known.get("type") not in _MODELLED:
                    thought, text = self._close(item, index)
                    reasoning += thought
                    content += text
        self._status(response)
        return reasoning, content

    def _status(self, response: dict[str, Any]) -> None:
        if isinstance(response.get("model"), str):
            self.model = response["model"]
        usage = usage_from_openai(response.get("usage"))
        if usage is not None:
            self.usage = usage
        error = response.get("error")
        if error:
            raise endpoint_error(error)
        if response.get("status") == "incomplete":
            details = response.get("incomplete_details")
            reason = details.get("reason") if isinstance(details, dict) else None
            self.finish_reason = _INCOMPLETE.get(str(reason), str(reason or "length"))

    def finish(self) -> tuple[str, str]:
        """The stream's end: one without its last event was cut short."""
        if not self.ended:
            raise EndpointError(f"the stream from {self.endpoint} ended before response.completed")
        return super().finish()

    # --- whole answers -----------------------------------------------------------------------

    def add_response(self, response: Any) -> None:
        """Fold a non-streamed response object in."""
        if not isinstance(response, dict):
            raise MalformedAnswer(f"{self.endpoint} answered with {_kind(response)}, not a JSON object")
        if response.get("status") == "failed" or response.get("error"):
            raise endpoint_error(response.get("error") or "the endpoint reported that the response failed")
        output = response.get("output", [])
        if not isinstance(output, list):
            raise MalformedAnswer(
                f"{self.endpoint}'s answer has output that is {_kind(output)}, not an array"
            )
        self._end(response)
        super().finish()

    def result(self) -> reasoner_pb2.StepResult:
        """The StepResult; the turn's output items kept as provider fields when any is not modelled."""
        items = [self._items[i] for i in sorted(self._items)]
        if any(item.get("type") not in _MODELLED for item in items):
            self.extra = {OUTPUT_FIELD: items}
        return super().result()


def _size(item: dict[str, Any]) -> int:
    return len(json.dumps(item, ensure_ascii=False, separators=(",", ":")).encode())


def _marker(item: dict[str, Any], modelled: tuple[str, ...]) -> dict[str, Any]:
    """An item without what the contract holds (its text, or its name and arguments)."""
    return {k: v for k, v in item.items() if k not in modelled}
