"""Reading OpenAI-style chat messages and filling script templates from them.

Scripts are written before the conversation exists, so the only way for a scripted answer to
mention what a tool returned is a placeholder resolved against the request's own messages.
Everything here is a pure function of the request, which keeps turn selection unit-testable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

NO_RESULT = "(no result)"
"""What a tool placeholder becomes when the conversation holds no matching tool result."""

_PLACEHOLDER = re.compile(r"\{\{(?:tool:([^{}]+)|(last_tool)|(user)|match:([^{}]+))\}\}")

Message = Mapping[str, Any]


def message_text(message: Message) -> str:
    """Flatten a message's content, which OpenAI allows to be null, a string or a list of parts."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [part.get("text", "") for part in content if isinstance(part, Mapping)]
        return "".join(text for text in texts if isinstance(text, str))
    return str(content)


def last_user_index(messages: Sequence[Message]) -> int:
    """Index of the last user message, or -1 when the request has none."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user":
            return index
    return -1


def tool_call_names(messages: Sequence[Message]) -> dict[str, str]:
    """Map every tool call id the assistant issued to the tool's name.

    Tool messages only carry the id, so this is how a ``{{tool:NAME}}`` placeholder finds them.
    """
    names: dict[str, str] = {}
    for message in messages:
        if message.get("role") != "assistant":
            continue
        calls = message.get("tool_calls")
        if not isinstance(calls, list):
            continue
        for call in calls:
            if not isinstance(call, Mapping):
                continue
            function = call.get("function")
            call_id = call.get("id")
            if isinstance(call_id, str) and isinstance(function, Mapping):
                name = function.get("name")
                if isinstance(name, str):
                    names[call_id] = name
    return names


def latest_tool_result(messages: Sequence[Message], name: str | None = None) -> str:
    """Content of the most recent tool message, optionally only for calls to ``name``."""
    names = tool_call_names(messages) if name is not None else {}
    for message in reversed(messages):
        if message.get("role") != "tool":
            continue
        if name is None or names.get(str(message.get("tool_call_id"))) == name:
            return message_text(message)
    return NO_RESULT


def matches_in(messages: Sequence[Message], pattern: str) -> str:
    """Every distinct match of ``pattern`` in the request's messages, in order, joined by "; ".

    This is how a scripted answer can depend on what the prompt really holds: a fact the
    client dropped from the conversation is simply not found.
    """
    try:
        regex = re.compile(pattern)
    except re.error:
        return NO_RESULT
    found: list[str] = []
    for message in messages:
        for hit in regex.findall(message_text(message)):
            text = hit if isinstance(hit, str) else "".join(hit)
            if text not in found:
                found.append(text)
    return "; ".join(found) if found else NO_RESULT


def render(template: str, messages: Sequence[Message]) -> str:
    """Fill ``{{tool:NAME}}``, ``{{last_tool}}``, ``{{user}}`` and ``{{match:REGEX}}``.

    Other braces stay verbatim.
    """
    if "{{" not in template:
        return template

    def substitute(match: re.Match[str]) -> str:
        tool_name, last_tool, _user, pattern = match.groups()
        if pattern is not None:
            return matches_in(messages, pattern)
        if tool_name is not None:
            return latest_tool_result(messages, tool_name.strip())
        if last_tool is not None:
            return latest_tool_result(messages)
        index = last_user_index(messages)  # the only other alternative is {{user}}
        return message_text(messages[index]) if index >= 0 else ""

    return _PLACEHOLDER.sub(substitute, template)
