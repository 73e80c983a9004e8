"""Writing tools for agentloop: the one module a tool author imports.

A tool is a plain typed Python function marked with ``@tool``; the ToolService serves the
modules it is given (``agentloop serve tools --tools mypkg.tools``) and the gateway offers their
tools to the model. Import from here rather than from the ToolService's own modules, whose
layout may change::

    from agentloop.tools import Conversation, UserId, tool

    @tool
    def greet(name: str, user: UserId, history: Conversation) -> str:
        '''Greet someone by name.'''
        return f"Hello {name}, from {user} after {len(history)} messages"

What is here, and when to use it:

- ``tool``, ``Tool``, ``ToolContext``: declare a tool; take a ``ToolContext`` argument to learn
  the call's deadline and ids (docs/tools.md).
- ``Conversation``, ``UserId``, ``ThreadId``, ``RunId``, ``RunMetadata``, ``Injected``: arguments
  the gateway fills in and the model never sees (docs/injected-arguments.md).
- ``NextStep``: what the model is told to do after the tool succeeds or fails
  (docs/flow-guidance.md); ``LoopPolicy``: how loop detection treats the tool
  (docs/loop-detection.md).
- ``ToolRegistry`` and ``execute``: run tools in your own process or tests, exactly as the
  ToolService runs them (docs/tools.md).
- ``load_mcp_config`` (``McpServerConfig``, ``McpConfigError``) and ``mcp_servers``: serve the
  tools of MCP servers beside your own (docs/mcp.md).
"""

from agentloop.kernel.loop_policy import LoopPolicy
from tool_svc.executor import execute
from tool_svc.injected import Conversation, Injected, RunId, RunMetadata, ThreadId, UserId
from tool_svc.mcp_client import mcp_servers
from tool_svc.mcp_config import McpConfigError, McpServerConfig, load_mcp_config
from tool_svc.registry import NextStep, Tool, ToolContext, ToolRegistry, tool

__all__ = [
    "Conversation",
    "Injected",
    "LoopPolicy",
    "McpConfigError",
    "McpServerConfig",
    "NextStep",
    "RunId",
    "RunMetadata",
    "ThreadId",
    "Tool",
    "ToolContext",
    "ToolRegistry",
    "UserId",
    "execute",
    "load_mcp_config",
    "mcp_servers",
    "tool",
]
