"""Requests from the agentloop.v1 contract to OpenAI Responses API bodies (``POST /responses``).

The Responses API takes the conversation as a list of input items rather than chat messages:
system and user turns are messages, an assistant turn is its output items (reasoning, message,
function calls) and a tool result is a ``function_call_output`` item. Nothing is stored
server-side (``store: false``): the reasoning items a model produced, with their encrypted
content (``include: ["reasoning.encrypted_content"]``), are kept on the assistant message as
provider fields and sent back verbatim, in their place among the turn's items, on every later
request of the conversation — a reasoning model refuses a follow-up whose function calls come
without the reasoning item they were made with.

What is kept (``provider_fields_json`` of the assistant message, key `OUTPUT_FIELD`) is the
turn's output items in order: items agentloop does not model (reasoning, and any other type)
verbatim, and for the answer text and each function call a marker holding everything but the
text, name and arguments, which come from the contract's message and calls (a hook may have
changed them). Chat-completions provider fields on a message are not sent here, nor is this
key sent to a chat-completions endpoint (reasoner_svc.convert).
"""

from __future__ import annotations

from typing import Any

from agentloop.kernel.errors import InvalidArgument
from agentloop.kernel.jsonlimits import JsonLimitError
from agentloop.v1 import common_pb2, reasoner_pb2
from reasoner_svc.convert import (
    OUTPUT_FIELD,
    TOOL_CHOICE_MODES,
    message_fields,
    response_format,
    sampling_kwargs,
    tool_to_openai,
)

ENCRYPTED_REASONING = "reasoning.encrypted_content"
"""What ``include`` asks for so reasoning can be carried across requests with nothing stored."""


def responses_body(
    params: reasoner_pb2.CompletionParams,
    model: str,
    *,
    encrypted_reasoning: bool = True,
    reasoning: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Validate CompletionParams and build a ``POST /responses`` body for `model`.

    `encrypted_reasoning` asks for the reasoning items' encrypted content with nothing stored
    (the default: the conversation is the gateway's); off, the endpoint stores its answers
    (``store: true``) and reasoning is not carried. `reasoning` is the model's ``reasoning``
    object (effort, summary), when it has one.
    """
    if not params.messages:
        raise InvalidArgument("params.messages", "must contain at least one message")
    items: list[dict[str, Any]] = []
    for i, message in enumerate(params.messages):
        items.extend(_items(message, f"params.messages[{i}]"))
    body: dict[str, Any] = {"model": model, "input": items}
    if encrypted_reasoning:
        body["store"] = False
        body["include"] = [ENCRYPTED_REASONING]
    if reasoning:
        body["reasoning"] = dict(reasoning)
    body.update(_tools(params))
    if params.response_format_json:
        body["text"] = {"format": _text_format(response_format(params.response_format_json))}
    sampling = sampling_kwargs(params)
    if "max_tokens" in sampling:
        sampling["max_output_tokens"] = sampling.pop("max_tokens")
    body.update(sampling)
    return body


def _items(message: common_pb2.Message, path: str) -> list[dict[str, Any]]:
    """The input items of one contract message."""
    if message.role == common_pb2.ROLE_SYSTEM:
        return [{"role": "system", "content": message.content}]
    if message.role == common_pb2.ROLE_USER:
        return [{"role": "user", "content": message.content}]
    if message.role == common_pb2.ROLE_TOOL:
        if not message.tool_call_id:
            raise InvalidArgument(f"{path}.tool_call_id", "must be set on a tool message")
        return [{"type": "function_call_output", "call_id": message.tool_call_id, "output": message.content}]
    if message.role == common_pb2.ROLE_ASSISTANT:
        return _assistant_items(message, path)
    raise InvalidArgument(f"{path}.role", "must be set to system, user, assistant or tool")


def _assistant_items(message: common_pb2.Message, path: str) -> list[dict[str, Any]]:
    """An assistant turn's items: its kept output in order, the contract's text and calls in their places.

    A call or text the kept output has no marker for (a hook added it; the turn came from
    another protocol) goes where a plain turn has it: the text first, then the calls.
    """
    calls = {call.id: (i, call) for i, call in enumerate(message.tool_calls)}
    placed: set[str] = set()
    text_placed = False
    items: list[dict[str, Any]] = []
    for position, item in enumerate(_kept_output(message, path)):
        if not isinstance(item, dict):
            raise InvalidArgument(
                f"{path}.provider_fields_json", f"{OUTPUT_FIELD}[{position}] is not an object"
            )
        kind = item.get("type")
        if kind == "message":
            if not text_placed and message.content:
                items.append(_text_item(message.content, item))
            text_placed = True
        elif kind == "function_call":
            found = calls.get(item.get("call_id", ""))
            if found is not None and found[1].id not in placed:
                placed.add(found[1].id)
                items.append(_call_item(found[1], item))
        else:
            items.append(item)
    if message.content and not text_placed:
        items.insert(_first_call_at(items), _text_item(message.content, {}))
    items.extend(_call_item(call, {}) for call in message.tool_calls if call.id not in placed)
    return items


def _kept_output(message: common_pb2.Message, path: str) -> list[Any]:
    if not message.provider_fields_json:
        return []
    try:
        fields = message_fields(message.provider_fields_json)
    except JsonLimitError as exc:
        raise InvalidArgument(f"{path}.provider_fields_json", exc.problem) from None
    except ValueError as exc:
        raise InvalidArgument(f"{path}.provider_fields_json", f"is not a JSON object: {exc}") from None
    output = fields.get(OUTPUT_FIELD, [])
    if not isinstance(output, list):
        raise InvalidArgument(f"{path}.provider_fields_json", f"{OUTPUT_FIELD} is not an array")
    return output


def _first_call_at(items: list[dict[str, Any]]) -> int:
    for i, item in enumerate(items):
        if item.get("type") == "function_call":
            return i
    return len(items)


def _text_item(text: str, marker: dict[str, Any]) -> dict[str, Any]:
    """The answer text as an assistant message item (the marker's id and status kept)."""
    if not marker:
        return {"role": "assistant", "content": text}
    item = {k: v for k, v in marker.items() if k != "content"}
    item.setdefault("role", "assistant")
    item["content"] = [{"type": "output_text", "text": text, "annotations": []}]
    return item


def _call_item(call: common_pb2.ToolCall, marker: dict[str, Any]) -> dict[str, Any]:
    """A contract tool call as a function_call item (the marker's item id and status kept)."""
    item = {k: v for k, v in marker.items() if k not in ("name", "arguments")}
    item.update(type="function_call", call_id=call.id, name=call.name, arguments=call.arguments_json or "{}")
    return item


def _tools(params: reasoner_pb2.CompletionParams) -> dict[str, Any]:
    """Function tools in the Responses shape (flat, not strict) and the tool choice."""
    if not params.tools:
        if params.HasField("tool_choice") and params.tool_choice.WhichOneof("choice") == "function_name":
            raise InvalidArgument("params.tool_choice", "names a tool but params.tools is empty")
        return {}
    tools = []
    for i, spec in enumerate(params.tools):
        function = tool_to_openai(spec, f"params.tools[{i}]")["function"]
        # Strict schemas must list every property as required; the contract's schemas need not.
        tools.append({"type": "function", **function, "strict": False})
    out: dict[str, Any] = {"tools": tools}
    choice = params.tool_choice.WhichOneof("choice") if params.HasField("tool_choice") else None
    if choice == "function_name":
        out["tool_choice"] = {"type": "function", "name": params.tool_choice.function_name}
    elif choice == "mode":
        out["tool_choice"] = TOOL_CHOICE_MODES[params.tool_choice.mode]
    if params.HasField("parallel_tool_calls"):
        out["parallel_tool_calls"] = params.parallel_tool_calls
    return out


def _text_format(value: Any) -> Any:
    """A chat-completions response_format as the Responses ``text.format``."""
    if (
        isinstance(value, dict)
        and value.get("type") == "json_schema"
        and isinstance(value.get("json_schema"), dict)
    ):
        return {"type": "json_schema", **value["json_schema"]}
    return value
