"""The Python client of the agentloop gateway: AgentClient (asyncio) and Client (blocking).

    from agentloop.client import AgentClient, Final, Interrupt, Token, approve

    async with AgentClient() as client:
        async for event in client.run("Book a table", thread_id="t1", require_approval=["book"]):
            match event:
                case Token(text=text):
                    print(text, end="")
                case Interrupt(pending=calls):
                    async for e in client.resume(event.run_id, [approve(c) for c in calls]):
                        ...
                case Final(reply=reply):
                    print(reply)

Events and results are the dataclasses of agentloop.client.events; errors are ClientError
(``code`` is the gRPC status name). See docs/client.md.
"""

from agentloop.client.aio import AgentClient
from agentloop.client.errors import ClientError
from agentloop.client.events import (
    Checkpoint,
    Decision,
    Error,
    Event,
    Final,
    Interrupt,
    Memory,
    Message,
    NodeFinished,
    NodeStarted,
    PendingCall,
    RunInfo,
    RunResult,
    Thread,
    ThreadSummary,
    Token,
    ToolDecision,
    ToolFinished,
    ToolResult,
    ToolStarted,
    Usage,
    approve,
    edit,
    reject,
)
from agentloop.client.sync import Client

__all__ = [
    "AgentClient",
    "Checkpoint",
    "Client",
    "ClientError",
    "Decision",
    "Error",
    "Event",
    "Final",
    "Interrupt",
    "Memory",
    "Message",
    "NodeFinished",
    "NodeStarted",
    "PendingCall",
    "RunInfo",
    "RunResult",
    "Thread",
    "ThreadSummary",
    "Token",
    "ToolDecision",
    "ToolFinished",
    "ToolResult",
    "ToolStarted",
    "Usage",
    "approve",
    "edit",
    "reject",
]
