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
(``code`` is the gRPC status name). See docs/client.md. ``TlsSettings`` names the certificates
of a TLS gateway; ``dict_to_struct`` / ``struct_to_dict`` turn JSON-like values into the
contract's ``Struct`` and back (an output schema, a structured answer).

The client stands on the contract (agentloop.v1) and the client-side kernel alone: a program
that only talks to a gateway imports none of the services.
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
from agentloop.kernel.settings import TlsSettings
from agentloop.kernel.wellknown import dict_to_struct, struct_to_dict

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
    "TlsSettings",
    "Token",
    "ToolDecision",
    "ToolFinished",
    "ToolResult",
    "ToolStarted",
    "Usage",
    "approve",
    "dict_to_struct",
    "edit",
    "reject",
    "struct_to_dict",
]
