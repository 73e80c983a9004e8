"""Tool-call ids the rest of the system can rely on: unique in their thread and storable.

The model names its tool calls, and nothing makes it name them well: an
OpenAI-compatible server that sends no ids gets `call_0`, `call_1`… from the
Reasoner at every step, models repeat ids within one reply, and an id may be
empty, huge, or hold NUL and control characters a database cannot store.
Everything downstream keys on the id (a result answers the call with its id,
stored results are found by it after a crash, the ToolService deduplicates by
it), so before the model's reply becomes the thread's assistant message every
call whose id is unusable, or already taken in the thread, gets a fresh one.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable

from agentloop.v1 import common_pb2

log = logging.getLogger(__name__)

MAX_CALL_ID_CHARS = 128
"""Longer ids are replaced: real providers use ~40 characters, and ids become database keys."""


def storable(call_id: str) -> bool:
    """Whether an id can be kept as given: non-empty, short, without NUL or control characters."""
    return 0 < len(call_id) <= MAX_CALL_ID_CHARS and not any(ord(ch) < 32 or ord(ch) == 127 for ch in call_id)


def new_call_id() -> str:
    """A gateway-made id; random, so it cannot collide with another in the thread."""
    return f"call_{uuid.uuid4().hex}"


def make_call_ids_unique(message: common_pb2.Message, history: Iterable[common_pb2.Message]) -> int:
    """Give each tool call of ``message`` an id that is storable and not used in ``history`` or before it.

    Changes ``message`` in place and returns how many ids were replaced.
    """
    used = {call.id for earlier in history for call in earlier.tool_calls}
    replaced = 0
    for call in message.tool_calls:
        if not storable(call.id) or call.id in used:
            call.id = new_call_id()
            replaced += 1
        used.add(call.id)
    if replaced:
        log.debug("replaced %d unusable or repeated tool-call ids", replaced)
    return replaced
