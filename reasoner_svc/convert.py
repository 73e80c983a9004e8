"""Translation between the agentloop.v1 contract and OpenAI chat-completions payloads.

Kept apart from the servicer so the mapping can be unit tested without a
network, and so the tool-call delta assembly (the fiddly part of streaming)
lives in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from agentloop.errors import InvalidArgument
from agentloop.jsonlimits import JsonLimitError, loads_bounded
from agentloop.v1 import common_pb2, reasoner_pb2

_ROLE_NAMES = {
    common_pb2.ROLE_SYSTEM: "system",
    common_pb2.ROLE_USER: "user",
    common_pb2.ROLE_ASSISTANT: "assistant",
    common_pb2.ROLE_TOOL: "tool",
}
_TOOL_CHOICE_MODES = {
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
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_json or "{}"},
            }
            for call in msg.tool_calls
        ]
    else:
        out["content"] = msg.content
    if role == "tool":
        if not msg.tool_call_id:
            raise InvalidArgument(f"{path}.tool_call_id", "must be set on a tool message")
        out["tool_call_id"] = msg.tool_call_id
    if msg.name and role != "tool":
        out["name"] = msg.name
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
        kwargs["response_format"] = _response_format(params.response_format_json)
    kwargs.update(_sampling_kwargs(params))
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
        kwargs["tool_choice"] = _TOOL_CHOICE_MODES[params.tool_choice.mode]
    if params.HasField("parallel_tool_calls"):
        kwargs["parallel_tool_calls"] = params.parallel_tool_calls
    return kwargs


def _response_format(text: str) -> Any:
    """The response format's JSON, read within the size and depth bounds of any client JSON."""
    try:
        return loads_bounded(text, what="response_format")
    except JsonLimitError as exc:
        raise InvalidArgument("params.response_format_json", exc.problem) from None
    except ValueError as exc:
        raise InvalidArgument("params.response_format_json", f"is not valid JSON: {exc}") from None


def _sampling_kwargs(params: reasoner_pb2.CompletionParams) -> dict[str, Any]:
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


def _dict(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{what} is not a JSON object")
    return value


def usage_from_openai(usage: Any) -> common_pb2.Usage:
    """Usage figures from an OpenAI usage object (reasoning tokens when reported)."""
    if not isinstance(usage, dict):
        return common_pb2.Usage()
    details = usage.get("completion_tokens_details")
    reasoning = details.get("reasoning_tokens") if isinstance(details, dict) else None
    return common_pb2.Usage(
        prompt_tokens=usage.get("prompt_tokens") or 0,
        completion_tokens=usage.get("completion_tokens") or 0,
        total_tokens=usage.get("total_tokens") or 0,
        reasoning_tokens=reasoning or 0,
    )


def reasoning_of(message: dict[str, Any]) -> str:
    """Reasoning text of a message or delta: `reasoning_content` (vLLM, DeepSeek) or `reasoning`."""
    value = message.get("reasoning_content") or message.get("reasoning")
    return value if isinstance(value, str) else ""


def completion_size(result: reasoner_pb2.StepResult) -> int:
    """UTF-8 bytes of a result's text, reasoning and tool calls (what a completion limit counts)."""
    message = result.message
    size = len(message.content.encode()) + len(message.reasoning_content.encode())
    return size + sum(len(c.name.encode()) + len(c.arguments_json.encode()) for c in message.tool_calls)


def result_from_completion(completion: Any) -> reasoner_pb2.StepResult:
    """A non-streamed chat.completion (decoded JSON) as a StepResult."""
    completion = _dict(completion, "the completion")
    choices = completion.get("choices") or []
    usage = usage_from_openai(completion.get("usage"))
    model = completion.get("model") or ""
    if not choices:
        return reasoner_pb2.StepResult(
            message=common_pb2.Message(role=common_pb2.ROLE_ASSISTANT),
            finish_reason="stop",
            usage=usage,
            model=model,
        )
    choice = _dict(choices[0], "choices[0]")
    msg = _dict(choice.get("message"), "choices[0].message")
    calls = []
    for i, raw in enumerate(msg.get("tool_calls") or ()):
        fn = _dict(_dict(raw, f"tool_calls[{i}]").get("function"), f"tool_calls[{i}].function")
        calls.append(
            common_pb2.ToolCall(
                id=raw.get("id") or f"call_{i}",
                name=fn.get("name") or "",
                arguments_json=fn.get("arguments") or "",
            )
        )
    return reasoner_pb2.StepResult(
        message=common_pb2.Message(
            role=common_pb2.ROLE_ASSISTANT,
            content=msg.get("content") or "",
            reasoning_content=reasoning_of(msg),
            tool_calls=calls,
        ),
        finish_reason=choice.get("finish_reason") or "",
        usage=usage,
        model=model,
    )


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class StreamAssembler:
    """Accumulates streamed chunks into the final assistant message.

    Tool calls arrive as deltas keyed by `index`: the first delta of a call
    carries its id and name, later ones append pieces of the arguments text.
    """

    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, _PartialCall] = field(default_factory=dict)
    finish_reason: str = ""
    model: str = ""
    usage: common_pb2.Usage = field(default_factory=common_pb2.Usage)
    size: int = 0
    """UTF-8 bytes of text, reasoning and tool-call arguments received so far."""

    def add_chunk(self, chunk: Any) -> tuple[str, str]:
        """Fold one chat.completion.chunk (decoded JSON) in; returns its (reasoning, content) text."""
        chunk = _dict(chunk, "a stream chunk")
        if chunk.get("usage"):
            self.usage = usage_from_openai(chunk["usage"])
        if chunk.get("model"):
            self.model = chunk["model"]
        reasoning_parts: list[str] = []
        content_parts: list[str] = []
        for choice in chunk.get("choices") or ():
            delta = _dict(_dict(choice, "a stream choice").get("delta") or {}, "a stream delta")
            reasoning = reasoning_of(delta)
            if reasoning:
                self.reasoning.append(reasoning)
                reasoning_parts.append(reasoning)
                self.size += len(reasoning.encode())
            content = delta.get("content")
            if content:
                self.content.append(content)
                content_parts.append(content)
                self.size += len(str(content).encode())
            for tc in delta.get("tool_calls") or ():
                fn = tc.get("function") or {}
                self.add_tool_call_delta(
                    tc.get("index", 0), tc.get("id"), fn.get("name"), fn.get("arguments")
                )
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return "".join(reasoning_parts), "".join(content_parts)

    def add_tool_call_delta(
        self, index: int, call_id: str | None, name: str | None, arguments: str | None
    ) -> None:
        """Merge one tool-call delta into the call at `index`."""
        call = self.calls.get(index)
        if call is None:
            call = self.calls[index] = _PartialCall()
        if call_id:
            call.id = call_id
        if name:
            call.name += name
            self.size += len(name.encode())
        if arguments:
            call.arguments.append(arguments)
            self.size += len(arguments.encode())

    def result(self) -> reasoner_pb2.StepResult:
        """The assembled StepResult; calls ordered by their stream index."""
        calls = [
            common_pb2.ToolCall(id=c.id or f"call_{i}", name=c.name, arguments_json="".join(c.arguments))
            for i, c in sorted(self.calls.items())
        ]
        finish = self.finish_reason or ("tool_calls" if calls else "stop")
        return reasoner_pb2.StepResult(
            message=common_pb2.Message(
                role=common_pb2.ROLE_ASSISTANT,
                content="".join(self.content),
                reasoning_content="".join(self.reasoning),
                tool_calls=calls,
            ),
            finish_reason=finish,
            usage=self.usage,
            model=self.model,
        )
