"""A hook module for tests: an operator hook that clients were not allowed to add."""

from __future__ import annotations

from agentloop.v1 import common_pb2
from gateway.policies.hooks import Hook, HookContext


def _shout(ctx: HookContext, message: common_pb2.Message) -> common_pb2.Message:
    loud = common_pb2.Message()
    loud.CopyFrom(message)
    loud.content = message.content.upper()
    return loud


HOOKS = {"shout": Hook("shout", post_reasoning=_shout)}
