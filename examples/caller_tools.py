"""A tool module for examples/injected_arguments.py: one tool whose context is injected by the gateway.

Serve it with `PYTHONPATH=examples agentloop serve tools --tools caller_tools`.
"""

from __future__ import annotations

from agentloop.tools import Conversation, RunId, RunMetadata, ThreadId, UserId, tool


@tool
def caller_info(
    topic: str,
    history: Conversation,
    user: UserId,
    thread: ThreadId,
    run: RunId,
    meta: RunMetadata,
) -> dict[str, object]:
    """Say who is asking, where, and how far the run is; use it before answering about the user.

    Args:
        topic: What the user wants to know about.
    """
    return {
        "topic": topic,
        "user": user,
        "thread": thread,
        "run_id_set": bool(run),
        "messages_so_far": len(history),
        "step": meta.get("step"),
        "max_steps": meta.get("max_steps"),
    }
