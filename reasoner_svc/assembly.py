"""Reading what an OpenAI-compatible endpoint answers, in every shape real servers send.

The chat-completions wire format is loose in practice, and each server bends it its own way:

- tool-call deltas are keyed by ``index``, but some servers reuse ``index: 0`` for every call of
  a parallel batch (telling them apart only by ``id``), and some send no ``index`` at all;
- ``function.arguments`` is JSON text, or a JSON object from some servers and proxies;
- ``content`` is text, null, or a list of parts (text, thinking, reasoning, refusal);
- reasoning comes as ``reasoning_content``, ``reasoning``, ``reasoning_details[].text``,
  thinking parts, or inline ``<think>…</think>`` tags in the text;
- usage and the finish reason arrive in the last chunk, in a chunk with empty ``choices``, inside
  a choice, or in a provider's own envelope;
- a server may add fields the next request must carry back (Gemini's thought signatures).

This module folds any of them into one ``StepResult``. What it cannot understand raises
`MalformedAnswer`, whose message says what was wrong, never a bare exception; an error object
inside a stream raises `EndpointError` (reasoner_svc.endpoint_errors maps both to a status).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agentloop.v1 import common_pb2, reasoner_pb2
from reasoner_svc.think_tags import ThinkMode, ThinkSplitter

# Keys of the standard shape. Anything else an endpoint puts on a tool call or on the message is
# kept as provider fields and sent back with the conversation.
_CALL_KEYS = frozenset({"index", "id", "type", "function"})
_MESSAGE_KEYS = frozenset(
    {
        "role",
        "content",
        "reasoning_content",
        "reasoning",
        "refusal",
        "tool_calls",
        "function_call",
        "audio",
        "annotations",
        "index",
        "name",
        "tool_call_id",
        # Annotations of the stream itself, not state of the answer: Groq's Harmony channel and
        # built-in tool runs, Hugging Face's and vLLM's token ids. Strict servers refuse them back.
        "channel",
        "executed_tools",
        "token_id",
        "token_ids",
        "logprobs",
        # reasoning_details carries reasoning text (surfaced) and encrypted reasoning the provider
        # wants back, so it is both read and kept.
    }
)
_PLAIN_DELTA = frozenset({"role", "content", "reasoning_content", "reasoning", "refusal"})
"""A delta with only these keys, text or null in them (refusal null), takes the short path."""
_TEXT_PARTS = frozenset({"text", "output_text"})
_REASONING_PARTS = frozenset({"thinking", "reasoning", "reasoning_text"})


class MalformedAnswer(ValueError):
    """The endpoint's answer has a shape this reader cannot make sense of; the message says where."""


@dataclass(eq=False)
class EndpointError(Exception):
    """An error the endpoint reported inside a 200 answer (a stream's error chunk or event).

    `status` is the HTTP-like code it carried (0 when none), `code` its code string, if any.
    Not frozen: raising sets an exception's traceback, which a frozen dataclass refuses when
    the error leaves a context manager.
    """

    message: str
    status: int = 0
    code: str = ""
    body: Any = None

    def __str__(self) -> str:
        return self.message


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise MalformedAnswer(f"{what} is {_kind(value)}, not a JSON object")
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    names = {
        str: "a string",
        list: "an array",
        dict: "an object",
        bool: "a boolean",
        int: "a number",
        float: "a number",
    }
    return names.get(type(value), f"a {type(value).__name__}")


def arguments_text(value: Any) -> str:
    """Tool-call arguments as JSON text: text is kept verbatim, an object or array is written compactly."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _int(value: Any) -> int:
    """A token count as an int: null or text counts 0, a float (from some proxies) its floor."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(0, min(value, 2**31 - 1))
    if isinstance(value, float) and value == value and value >= 0:
        return min(int(value), 2**31 - 1)
    return 0


def _detail(usage: dict[str, Any], *path: str) -> int:
    value: Any = usage
    for key in path:
        if not isinstance(value, dict):
            return 0
        value = value.get(key)
    return _int(value)


def usage_from_openai(usage: Any) -> common_pb2.Usage | None:
    """Usage figures from a usage object, in the spellings providers use; None when there is none.

    Cached prompt tokens: ``prompt_tokens_details.cached_tokens`` (OpenAI, xAI, Qwen, vLLM),
    ``prompt_cache_hit_tokens`` (DeepSeek), ``cache_read_input_tokens`` (Anthropic-style gateways),
    ``input_tokens_details.cached_tokens``. Reasoning tokens:
    ``completion_tokens_details.reasoning_tokens`` or ``output_tokens_details.reasoning_tokens``.
    """
    if not isinstance(usage, dict):
        return None
    prompt = _int(usage.get("prompt_tokens", usage.get("input_tokens")))
    completion = _int(usage.get("completion_tokens", usage.get("output_tokens")))
    total = _int(usage.get("total_tokens")) or prompt + completion
    cached = (
        _detail(usage, "prompt_tokens_details", "cached_tokens")
        or _int(usage.get("prompt_cache_hit_tokens"))
        or _int(usage.get("cache_read_input_tokens"))
        or _detail(usage, "input_tokens_details", "cached_tokens")
    )
    reasoning = _detail(usage, "completion_tokens_details", "reasoning_tokens") or _detail(
        usage, "output_tokens_details", "reasoning_tokens"
    )
    return common_pb2.Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=total,
        reasoning_tokens=reasoning,
        cached_prompt_tokens=cached,
    )


def _usage_of(chunk: dict[str, Any]) -> common_pb2.Usage | None:
    """Usage wherever a server put it: the chunk, its first choice, or Groq's ``x_groq`` envelope."""
    found = usage_from_openai(chunk.get("usage"))
    if found is not None:
        return found
    envelope = chunk.get("x_groq")
    if isinstance(envelope, dict):
        found = usage_from_openai(envelope.get("usage"))
        if found is not None:
            return found
    for choice in chunk.get("choices") or ():
        if isinstance(choice, dict):
            found = usage_from_openai(choice.get("usage"))
            if found is not None:
                return found
    return None


def error_in(chunk: dict[str, Any]) -> EndpointError | None:
    """The error a chunk (or a whole answer) reports instead of content, if it does.

    A top-level ``error`` (OpenRouter, DeepSeek, LiteLLM, Anthropic's error event), an object whose
    ``object`` is ``"error"`` (vLLM), or a choice finished with ``finish_reason: "error"``.
    """
    error = chunk.get("error")
    if error is None and chunk.get("object") == "error":
        error = chunk
    if error is None:
        for choice in chunk.get("choices") or ():
            if isinstance(choice, dict) and choice.get("finish_reason") == "error":
                error = choice.get("error") or {"message": "the endpoint ended the answer with an error"}
    if error is None or error is False:
        return None
    return endpoint_error(error)


def endpoint_error(error: Any) -> EndpointError:
    """An error object (or text) in any of its shapes as an EndpointError."""
    if isinstance(error, str):
        return EndpointError(error or "the endpoint reported an error", body=error)
    if not isinstance(error, dict):
        return EndpointError(f"the endpoint reported an error: {json.dumps(error)[:500]}", body=error)
    inner = error.get("error")
    if isinstance(inner, dict) and "message" not in error:
        return endpoint_error(inner)  # {"error": {"error": {...}}} from some proxies
    message = error.get("message") or inner or error.get("detail") or error.get("type") or ""
    if not isinstance(message, str):
        message = json.dumps(message, ensure_ascii=False)
    status = 0
    code_text = ""
    for key in ("code", "status_code", "status"):
        value = error.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
            status = status or value
        elif isinstance(value, str) and value:
            if value.isdigit() and 100 <= int(value) <= 599:
                status = status or int(value)
            else:
                code_text = code_text or value
    metadata = error.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("error_type"), str):
        code_text = code_text or metadata["error_type"]
    if not code_text and isinstance(error.get("type"), str):
        code_text = error["type"]
    return EndpointError(
        message or "the endpoint reported an error", status=status, code=code_text, body=error
    )


def _merge_extra(into: dict[str, Any], extra: dict[str, Any]) -> None:
    """Fold one delta's provider fields in: objects merge, arrays extend, new text is appended."""
    for key, value in extra.items():
        if value is None:
            continue
        old = into.get(key)
        if isinstance(old, dict) and isinstance(value, dict):
            _merge_extra(old, value)
        elif isinstance(old, list) and isinstance(value, list):
            old.extend(value)
        elif isinstance(old, str) and isinstance(value, str) and old != value:
            into[key] = old + value
        else:
            into[key] = value


def _extras(obj: dict[str, Any], standard: frozenset[str]) -> dict[str, Any]:
    """What `obj` carries beyond the standard keys, without nulls and empty values (they carry nothing)."""
    return {k: v for k, v in obj.items() if k not in standard and v not in (None, "", [], {})}


def _details_text(details: Any) -> str:
    """Readable reasoning in ``reasoning_details`` (OpenRouter): its text and summary items."""
    if not isinstance(details, list):
        return ""
    out = []
    for item in details:
        if isinstance(item, dict):
            text = item.get("text") if item.get("type") != "reasoning.summary" else item.get("summary")
            if isinstance(text, str):
                out.append(text)
    return "".join(out)


def _part_text(value: Any) -> str:
    """Text of a part's payload: a string, or a list of text parts (Mistral's thinking)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(_part_text(item.get("text") if isinstance(item, dict) else item) for item in value)
    return ""


def split_content(content: Any, what: str) -> tuple[str, str]:
    """(reasoning, text) of a ``content`` value: text, null, or a list of parts."""
    if content is None:
        return "", ""
    if isinstance(content, str):
        return "", content
    if not isinstance(content, list):
        raise MalformedAnswer(f"{what}.content is {_kind(content)}, not text or a list of parts")
    reasoning: list[str] = []
    text: list[str] = []
    for part in content:
        if isinstance(part, str):
            text.append(part)
            continue
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind in _TEXT_PARTS:
            text.append(_part_text(part.get("text")))
        elif kind in _REASONING_PARTS:
            reasoning.append(_part_text(part.get(kind, part.get("text"))))
        elif kind == "refusal":
            text.append(_part_text(part.get("refusal")))
        # Other parts (images, audio, citations) have no place in a text answer and are left out.
    return "".join(reasoning), "".join(text)


def reasoning_of(message: dict[str, Any]) -> str:
    """Reasoning text of a message or delta.

    ``reasoning_content`` (DeepSeek, vLLM, llama.cpp, xAI, Qwen), else ``reasoning`` (OpenRouter,
    Groq, newer vLLM, Ollama), else the text of ``reasoning_details`` — OpenRouter sends the same
    text in both ``reasoning`` and ``reasoning_details``, so the details are read only when it did not.
    """
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    return _details_text(message.get("reasoning_details"))


@dataclass
class _Call:
    index: Any
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def proto(self, fallback_id: str) -> common_pb2.ToolCall:
        return common_pb2.ToolCall(
            id=self.id or fallback_id,
            name=self.name,
            arguments_json="".join(self.arguments),
            provider_fields_json=_json_text(self.extra),
        )


def _json_text(extra: dict[str, Any]) -> str:
    return json.dumps(extra, ensure_ascii=False, separators=(",", ":")) if extra else ""


@dataclass
class AnswerReader:
    """Folds an answer in, streamed chunk by chunk or whole, into the final assistant message.

    Tool-call deltas are matched to their call by ``index`` AND ``id``: a delta naming an id other
    than the one its index holds starts a new call (servers that reuse ``index: 0`` for a parallel
    batch), and a delta without an index continues the newest call unless it brings a new id.
    ``endpoint`` names the model endpoint in error messages.
    """

    endpoint: str = "the model endpoint"
    think: ThinkMode = ThinkMode.OFF
    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: list[_Call] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    finish_reason: str = ""
    model: str = ""
    usage: common_pb2.Usage = field(default_factory=common_pb2.Usage)
    size: int = 0
    """UTF-8 bytes of text, reasoning, tool calls and provider fields received so far."""
    provider_size: int = 0
    """UTF-8 bytes of the provider fields among them."""
    _by_index: dict[Any, _Call] = field(default_factory=dict)
    _splitter: ThinkSplitter | None = None

    def __post_init__(self) -> None:
        if self.think is not ThinkMode.OFF:
            self._splitter = ThinkSplitter(self.think)

    # --- streamed answers --------------------------------------------------------------------

    def add_chunk(self, chunk: Any) -> tuple[str, str]:
        """Fold one ``chat.completion.chunk`` (decoded JSON) in; returns its (reasoning, content) text.

        Raises EndpointError for a chunk that reports an error, MalformedAnswer for one that is not
        a chunk at all.
        """
        if not isinstance(chunk, dict):
            raise MalformedAnswer(
                f"{self.endpoint} sent a stream event that is {_kind(chunk)}, not a JSON object"
            )
        # Checked by key first: a step folds hundreds of chunks, nearly all of them plain text.
        if "error" in chunk or chunk.get("object") == "error":
            error = error_in(chunk)
            if error is not None:
                raise error
        if chunk.get("usage") is not None or "x_groq" in chunk:
            usage = _usage_of(chunk)
            if usage is not None:
                self.usage = usage
        model = chunk.get("model")
        if model and isinstance(model, str):
            self.model = model
        choices = chunk.get("choices")
        if not choices:
            return "", ""
        if not isinstance(choices, list):
            raise MalformedAnswer(
                f"{self.endpoint} sent a chunk whose choices is {_kind(choices)}, not an array"
            )
        reasoning = content = ""
        for position, choice in enumerate(choices):
            thought, text = self._fold_choice(choice, position)
            reasoning += thought
            content += text
        return self._emit(reasoning, content)

    def _fold_choice(self, choice: Any, position: int) -> tuple[str, str]:
        """One streamed choice's (reasoning, content); its finish reason, usage and calls folded in."""
        if not isinstance(choice, dict):
            raise MalformedAnswer(
                f"{self.endpoint}'s chunk choices[{position}] is {_kind(choice)}, not a JSON object"
            )
        if choice.get("index", 0) not in (0, None):
            return "", ""  # another candidate (n > 1): the step answers with the first
        finish = choice.get("finish_reason")
        if finish == "error":
            raise error_in({"choices": [choice]}) or EndpointError(
                "the endpoint ended the answer with an error"
            )
        if choice.get("usage") is not None:
            usage = usage_from_openai(choice["usage"])
            if usage is not None:
                self.usage = usage
        delta = choice.get("delta")
        if delta is None:
            delta = choice.get("message") or {}  # a few servers stream whole messages
        if not isinstance(delta, dict):
            raise MalformedAnswer(
                f"{self.endpoint}'s chunk choices[{position}].delta is {_kind(delta)}, not a JSON object"
            )
        folded = self._fold(delta, "choices[0].delta" if position == 0 else f"choices[{position}].delta")
        if finish and isinstance(finish, str):
            self.finish_reason = finish
        return folded

    def finish(self) -> tuple[str, str]:
        """The (reasoning, content) text held back at the end (a partial think tag); call once, last."""
        if self._splitter is None:
            return "", ""
        thought, text = self._splitter.flush()
        self.reasoning.append(thought)
        self.content.append(text)
        return thought, text

    def _emit(self, reasoning: str, content: str) -> tuple[str, str]:
        if self._splitter is not None and content:
            thought, content = self._splitter.feed(content)
            reasoning += thought
        if reasoning:
            self.reasoning.append(reasoning)
        if content:
            self.content.append(content)
        if reasoning:
            self.size += len(reasoning.encode())
        if content:
            self.size += len(content.encode())
        return reasoning, content

    def _fold(self, delta: dict[str, Any], what: str) -> tuple[str, str]:
        """One delta's reasoning and text; its tool calls and provider fields are folded in."""
        if delta.keys() <= _PLAIN_DELTA:
            # The common delta: text or reasoning, nothing else to fold.
            text = delta.get("content")
            thought = delta.get("reasoning_content") or delta.get("reasoning")
            plain = delta.get("refusal") is None and (text is None or isinstance(text, str))
            if plain and (thought is None or isinstance(thought, str)):
                return thought or "", text or ""
        thought, text = split_content(delta.get("content"), f"{self.endpoint}'s {what}")
        thought = reasoning_of(delta) + thought
        refusal = delta.get("refusal")
        if isinstance(refusal, str):
            text += refusal
        calls = delta.get("tool_calls")
        if calls is not None:
            if not isinstance(calls, list):
                raise MalformedAnswer(f"{self.endpoint}'s {what}.tool_calls is {_kind(calls)}, not an array")
            for position, call in enumerate(calls):
                self._fold_call(_object(call, f"{self.endpoint}'s {what}.tool_calls[{position}]"))
        legacy = delta.get("function_call")
        if isinstance(legacy, dict):
            self._fold_call({"function": legacy})
        if delta.keys() - _MESSAGE_KEYS:
            extra = _extras(delta, _MESSAGE_KEYS)
            if extra:
                self._count_extra(extra)
                _merge_extra(self.extra, extra)
        return thought, text

    def _fold_call(self, delta: dict[str, Any]) -> None:
        """Merge one tool-call delta into its call (see the class docstring for how it is found)."""
        index = delta.get("index")
        call_id = delta.get("id") if isinstance(delta.get("id"), str) else ""
        function = delta.get("function") or {}
        if not isinstance(function, dict):
            raise MalformedAnswer(f"{self.endpoint} sent a tool call whose function is {_kind(function)}")
        name = function.get("name")
        name = name if isinstance(name, str) else ""
        named = bool(name)
        # A new call opens with its name; a new id without one is a server renaming the same call.
        if index is None:
            # Whole calls one after another (Mistral, Gemini): a name starts the next one unless it
            # repeats the current call's id; pieces without a name continue the current call.
            call = self.calls[-1] if self.calls else None
            fresh = call is None or bool(named and call.name and not (call_id and call_id == call.id))
        else:
            call = self._by_index.get(index)
            fresh = call is None or bool(named and call_id and call.id and call_id != call.id)
        if fresh or call is None:
            call = _Call(index=index)
            self.calls.append(call)
            if index is not None:
                self._by_index[index] = call
        if call_id and not call.id:
            call.id = call_id
        if named and name != call.name:
            call.name += name
            self.size += len(name.encode())
        raw = function.get("arguments")
        if raw is not None:
            piece = arguments_text(raw)
            if not isinstance(raw, str) and "".join(call.arguments) in ("", "{}"):
                call.arguments = [piece]  # a whole object replaces an empty start
            elif piece:
                call.arguments.append(piece)
            self.size += len(piece.encode())
        extra = _extras(delta, _CALL_KEYS)
        if extra:
            self._count_extra(extra)
            _merge_extra(call.extra, extra)

    def _count_extra(self, extra: dict[str, Any]) -> None:
        size = len(_json_text(extra).encode())
        self.size += size
        self.provider_size += size

    # --- whole answers -----------------------------------------------------------------------

    def add_completion(self, completion: Any) -> None:
        """Fold a non-streamed ``chat.completion`` (decoded JSON) in."""
        if not isinstance(completion, dict):
            raise MalformedAnswer(f"{self.endpoint} answered with {_kind(completion)}, not a JSON object")
        error = error_in(completion)
        if error is not None:
            raise error
        usage = _usage_of(completion)
        if usage is not None:
            self.usage = usage
        if isinstance(completion.get("model"), str):
            self.model = completion["model"]
        choices = completion.get("choices") or []
        if not isinstance(choices, list):
            raise MalformedAnswer(
                f"{self.endpoint}'s answer has choices that are {_kind(choices)}, not an array"
            )
        if not choices:
            return
        choice = _object(choices[0], f"{self.endpoint}'s answer choices[0]")
        message = _object(choice.get("message") or {}, f"{self.endpoint}'s answer choices[0].message")
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            # Whole calls, each its own: an index (or none) says nothing here.
            message = {**message, "tool_calls": [_unindexed(call, i) for i, call in enumerate(calls)]}
        thought, text = self._fold(message, "choices[0].message")
        self._emit(thought, text)
        self.finish()
        finish = choice.get("finish_reason")
        if isinstance(finish, str):
            self.finish_reason = finish

    def result(self) -> reasoner_pb2.StepResult:
        """The assembled StepResult; calls ordered by their stream index, then by arrival."""
        ordered = self.calls
        if all(isinstance(call.index, int) for call in ordered):
            ordered = sorted(ordered, key=lambda call: int(call.index))
        calls = [call.proto(f"call_{i}") for i, call in enumerate(ordered)]
        finish = self.finish_reason or ("tool_calls" if calls else "stop")
        return reasoner_pb2.StepResult(
            message=common_pb2.Message(
                role=common_pb2.ROLE_ASSISTANT,
                content="".join(self.content),
                reasoning_content="".join(self.reasoning),
                tool_calls=calls,
                provider_fields_json=_json_text(self.extra),
            ),
            finish_reason=finish,
            usage=self.usage,
            model=self.model,
        )


def _unindexed(call: Any, position: int) -> Any:
    if isinstance(call, dict):
        return {**call, "index": ("whole", position)}
    return call


def result_from_completion(
    completion: Any, endpoint: str = "the model endpoint", think: ThinkMode = ThinkMode.OFF
) -> reasoner_pb2.StepResult:
    """A non-streamed chat.completion (decoded JSON) as a StepResult."""
    reader = AnswerReader(endpoint=endpoint, think=think)
    reader.add_completion(completion)
    return reader.result()
