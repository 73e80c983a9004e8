"""Fitting a conversation into the model's context budget.

Before each model call the conversation is cut to a token budget: the system
prompt always stays, then whole groups are kept newest first. A group is an
assistant message with tool calls together with their tool results, or any
other single message; cutting inside a group would leave a tool result without
its call (or a call without its result), which endpoints reject. The group
holding the newest user message is kept even when it alone exceeds the budget.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentloop.v1 import common_pb2

# Rough tokens per character for budgeting; exact counts depend on the model's tokenizer.
_CHARS_PER_TOKEN = 4
_MESSAGE_OVERHEAD_TOKENS = 4


def estimate_tokens(message: common_pb2.Message) -> int:
    """A tokenizer-free estimate: ~4 characters per token plus a per-message overhead."""
    chars = len(message.content)
    for call in message.tool_calls:
        chars += len(call.name) + len(call.arguments_json)
    return _MESSAGE_OVERHEAD_TOKENS + chars // _CHARS_PER_TOKEN


def _groups(messages: Sequence[common_pb2.Message]) -> list[list[common_pb2.Message]]:
    groups: list[list[common_pb2.Message]] = []
    for msg in messages:
        if msg.role == common_pb2.ROLE_TOOL and groups and _open_calls(groups[-1]):
            groups[-1].append(msg)
        else:
            groups.append([msg])
    return groups


def _open_calls(group: list[common_pb2.Message]) -> bool:
    head = group[0]
    return head.role == common_pb2.ROLE_ASSISTANT and len(head.tool_calls) > 0


def trim(messages: Sequence[common_pb2.Message], budget_tokens: int) -> list[common_pb2.Message]:
    """The messages to send: system messages, then the newest whole groups within `budget_tokens`.

    A budget of 0 disables trimming.
    """
    if budget_tokens <= 0:
        return list(messages)
    system = [m for m in messages if m.role == common_pb2.ROLE_SYSTEM]
    rest = [m for m in messages if m.role != common_pb2.ROLE_SYSTEM]
    used = sum(estimate_tokens(m) for m in system)
    if used + sum(estimate_tokens(m) for m in rest) <= budget_tokens:
        return list(messages)
    groups = _groups(rest)
    last_user = max(
        (i for i, g in enumerate(groups) if g[0].role == common_pb2.ROLE_USER), default=len(groups) - 1
    )
    kept: list[list[common_pb2.Message]] = []
    for i in range(len(groups) - 1, -1, -1):
        cost = sum(estimate_tokens(m) for m in groups[i])
        if i >= last_user or used + cost <= budget_tokens:
            kept.append(groups[i])
            used += cost
        else:
            break
    kept.reverse()
    return system + [m for g in kept for m in g]
