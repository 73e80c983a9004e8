"""A hook module for examples/hooks.py: the gateway loads it from AGENTLOOP_HOOK_MODULES.

    PYTHONPATH=examples AGENTLOOP_HOOK_MODULES=my_hooks AGENTLOOP_HOOKS=redact_secrets \
        agentloop serve gateway
"""

from __future__ import annotations

from agentloop.hooks import Hook, HookContext
from agentloop.v1 import common_pb2

STYLE = "House style: answer in one short paragraph and name the tools you used."


def add_house_style(ctx: HookContext, messages: list[common_pb2.Message]) -> list[common_pb2.Message]:
    """pre_reasoning: one more system message for this model call (it is not stored in the thread)."""
    return [*messages, common_pb2.Message(role=common_pb2.ROLE_SYSTEM, content=STYLE)]


def audit_calls(ctx: HookContext, calls: list[common_pb2.ToolCall]) -> list[common_pb2.ToolCall]:
    """pre_acting: log the calls about to run, unchanged (so no decision event is emitted)."""
    for call in calls:
        print(f"  [audit] user={ctx.user_id!r} step={ctx.step} runs {call.name}({call.arguments_json})")
    return calls


async def sign_answer(ctx: HookContext, message: common_pb2.Message) -> common_pb2.Message:
    """post_reasoning (async works too): append a signature to answers, leave tool calls alone."""
    if message.tool_calls or not message.content:
        return message
    signed = common_pb2.Message()
    signed.CopyFrom(message)  # return a changed copy: never mutate what the hook was given
    signed.content = f"{message.content} (checked by the gateway)"
    return signed


HOOKS = {
    "house_style": Hook("house_style", pre_reasoning=add_house_style),
    "audit": Hook("audit", pre_acting=audit_calls),
    "sign": Hook("sign", post_reasoning=sign_answer),
}
