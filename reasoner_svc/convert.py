"""Requests from the agentloop.v1 contract to OpenAI chat-completions payloads.

Kept apart from the servicer so the mapping can be unit tested without a
network. Reading the answers back is reasoner_svc.assembly's.

Provider fields (what an endpoint sent beyond the standard shape, kept on the
message and on each tool call) go back verbatim, merged into the message or
call they came with; they never replace a standard key. What a Responses API
endpoint kept on a message (`OUTPUT_FIELD`, reasoner_svc.responses_request) is
that protocol's and is not sent to a chat-completions endpoint.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from agentloop.kernel.errors import InvalidArgument
from agentloop.kernel.jsonlimits import JsonLimitError, loads_bounded
from agentloop.v1 import common_pb2, reasoner_pb2

OUTPUT_FIELD = "responses_output"
"""The provider field holding a Responses API turn's output items (read only by that protocol)."""

_ROLE_NAMES = {
    common_pb2.ROLE_SYSTEM: "system",
    common_pb2.ROLE_USER: "user",
    common_pb2.ROLE_ASSISTANT: "assistant",
    common_pb2.ROLE_TOOL: "tool",
}
TOOL_CHOICE_MODES = {
    common_pb2.TOOL_CHOICE_MODE_UNSPECIFIED: "auto",
    common_pb2.TOOL_CHOICE_MODE_AUTO: "auto",
    common_pb2.TOOL_CHOICE_MODE_REQUIRED: "required",
    common_pb2.TOOL_CHOICE_MODE_NONE: "none",
}


@lru_cache(maxsize=1024)
def _parse_schema(text: str) -> dict[str, Any]:
    """Parse a tool's JSON schema once: the gateway sends the same specs every step."""
    value = loads_bounded(text, what="schema") if text else {"type": "object", "properties": {}}
    if not isinstance(value, dict):
        raise ValueError("must be a JSON object")
    return value


def message_to_openai(msg: common_pb2.Message, path: str) -> dict[str, Any]:
    """One contract message as an OpenAI message dict; `path` names it in errors."""
    role = _ROLE_NAMES.get(msg.role)
    if role is None:
        raise InvalidArgument(f"{path}.role", "must be set to system, user, assistant or tool")
    out: dict[str, Any] = {"role": role}
    if role == "assistant" and msg.tool_calls:
        out["content"] = msg.content or None
        out["tool_calls"] = [
            _with_provider_fields(
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_json or "{}"},
                },
                call.provider_fields_json,
                f"{path}.tool_calls[{i}].provider_fields_json",
            )
            for i, call in enumerate(msg.tool_calls)
        ]
    else:
        out["content"] = msg.content
    if role == "assistant" and msg.provider_fields_json:
        _with_provider_fields(out, msg.provider_fields_json, f"{path}.provider_fields_json")
    if role == "tool":
        if not msg.tool_call_id:
            raise InvalidArgument(f"{path}.tool_call_id", "must be set on a tool message")
        out["tool_call_id"] = msg.tool_call_id
    if msg.name and role != "tool":
        out["name"] = msg.name
    return out


@lru_cache(maxsize=1024)
def message_fields(text: str) -> dict[str, Any]:
    """Parse stored provider fields once: the gateway sends the same history every step."""
    value = loads_bounded(text, what="provider fields")
    if not isinstance(value, dict):
        raise ValueError("must be a JSON object")
    return value


def _with_provider_fields(out: dict[str, Any], text: str, path: str) -> dict[str, Any]:
    """`out` with the provider fields of `text` added (standard keys are left as they are)."""
    if not text:
        return out
    try:
        fields = message_fields(text)
    except JsonLimitError as exc:
        raise InvalidArgument(path, exc.problem) from None
    except ValueError as exc:
        raise InvalidArgument(path, f"is not a JSON object: {exc}") from None
    for key, value in fields.items():
        if key != OUTPUT_FIELD:
            out.setdefault(key, value)
    return out


def tool_to_openai(spec: common_pb2.ToolSpec, path: str) -> dict[str, Any]:
    """One tool spec as an OpenAI function tool."""
    if not spec.name:
        raise InvalidArgument(f"{path}.name", "must not be empty")
    try:
        parameters = _parse_schema(spec.parameters_json_schema)
    except ValueError as exc:
        raise InvalidArgument(f"{path}.parameters_json_schema", f"is not a JSON object: {exc}") from None
    function: dict[str, Any] = {"name": spec.name, "parameters": parameters}
    if spec.description:
        function["description"] = spec.description
    return {"type": "function", "function": function}


def request_kwargs(params: reasoner_pb2.CompletionParams, default_model: str) -> dict[str, Any]:
    """Validate CompletionParams and build the keyword arguments of `chat.completions.create`."""
    if not params.messages:
        raise InvalidArgument("params.messages", "must contain at least one message")
    kwargs: dict[str, Any] = {
        "model": params.model or default_model,
        "messages": [message_to_openai(m, f"params.messages[{i}]") for i, m in enumerate(params.messages)],
    }
    kwargs.update(_tool_kwargs(params))
    if params.response_format_json:
        kwargs["response_format"] = response_format(params.response_format_json)
    kwargs.update(sampling_kwargs(params))
    return kwargs


def _tool_kwargs(params: reasoner_pb2.CompletionParams) -> dict[str, Any]:
    """The tools offered and how the model may choose among them.

    A tool choice naming a function with no tools offered is refused here:
    the endpoint's own error would not say which field is wrong.
    """
    if not params.tools:
        if params.HasField("tool_choice") and params.tool_choice.WhichOneof("choice") == "function_name":
            raise InvalidArgument("params.tool_choice", "names a tool but params.tools is empty")
        return {}
    kwargs: dict[str, Any] = {
        "tools": [tool_to_openai(t, f"params.tools[{i}]") for i, t in enumerate(params.tools)]
    }
    choice = params.tool_choice.WhichOneof("choice") if params.HasField("tool_choice") else None
    if choice == "function_name":
        kwargs["tool_choice"] = {
            "type": "function",
            "function": {"name": params.tool_choice.function_name},
        }
    elif choice == "mode":
        kwargs["tool_choice"] = TOOL_CHOICE_MODES[params.tool_choice.mode]
    if params.HasField("parallel_tool_calls"):
        kwargs["parallel_tool_calls"] = params.parallel_tool_calls
    return kwargs


def response_format(text: str) -> Any:
    """The response format's JSON, read within the size and depth bounds of any client JSON."""
    try:
        return loads_bounded(text, what="response_format")
    except JsonLimitError as exc:
        raise InvalidArgument("params.response_format_json", exc.problem) from None
    except ValueError as exc:
        raise InvalidArgument("params.response_format_json", f"is not valid JSON: {exc}") from None


def sampling_kwargs(params: reasoner_pb2.CompletionParams) -> dict[str, Any]:
    """Temperature and token limit, checked here so a bad value is the caller's error, not the endpoint's."""
    kwargs: dict[str, Any] = {}
    if params.HasField("temperature"):
        if not 0.0 <= params.temperature <= 2.0:
            raise InvalidArgument("params.temperature", "must be between 0 and 2")
        kwargs["temperature"] = params.temperature
    if params.HasField("max_tokens"):
        if params.max_tokens <= 0:
            raise InvalidArgument("params.max_tokens", "must be positive")
        kwargs["max_tokens"] = params.max_tokens
    return kwargs
