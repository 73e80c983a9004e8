"""A hook module for tests: counts post-reasoning calls per run, changes nothing.

The gateway imports it by name (`hook_modules`), so tests read the same
module-level counter the gateway writes.
"""

from __future__ import annotations

from collections import Counter

from agentloop.v1 import common_pb2
from gateway.policies.hooks import Hook, HookContext

POST_REASONING_CALLS: Counter[str] = Counter()
"""run id → how many times the post-reasoning hook saw one of its model messages."""


def _count(ctx: HookContext, message: common_pb2.Message) -> common_pb2.Message:
    POST_REASONING_CALLS[ctx.run_id] += 1
    return message


HOOKS = {"count_model_messages": Hook("count_model_messages", post_reasoning=_count)}
