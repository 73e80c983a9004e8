"""The ToolService: a registry of typed Python tools and an executor for batches of calls.

Write a tool as a plain typed function, mark it with ``@tool`` and load its
module with ``agentloop serve tools --tools mypkg.tools``; see docs/tools.md.
"""

from agentloop.kernel.loop_policy import LoopPolicy
from tool_svc.injected import Conversation, Injected, RunId, RunMetadata, ThreadId, UserId
from tool_svc.registry import NextStep, Tool, ToolContext, ToolRegistry, tool

__all__ = [
    "Conversation",
    "Injected",
    "LoopPolicy",
    "NextStep",
    "RunId",
    "RunMetadata",
    "ThreadId",
    "Tool",
    "ToolContext",
    "ToolRegistry",
    "UserId",
    "tool",
]
