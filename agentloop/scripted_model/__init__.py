"""A scripted OpenAI-compatible server (chat completions, Responses API) for tests, demos and benchmarks.

Point any OpenAI client at ``ScriptedModelServer.base_url`` to run an agent against a model whose
every answer, tool call, delay and failure is decided in advance.
"""

from agentloop.scripted_model.cli import serve
from agentloop.scripted_model.demo import DEMO_QUESTION, DEMO_SQL_QUESTION, demo_script
from agentloop.scripted_model.messages import NO_RESULT
from agentloop.scripted_model.recording import Recording
from agentloop.scripted_model.script import (
    DEFAULT_FINAL_TEXT,
    ECHO_SCENARIO,
    Fault,
    FaultKind,
    Latency,
    Scenario,
    Script,
    ScriptedToolCall,
    Turn,
)
from agentloop.scripted_model.server import MODEL_ID, ScriptedModelServer

__all__ = [
    "DEFAULT_FINAL_TEXT",
    "DEMO_QUESTION",
    "DEMO_SQL_QUESTION",
    "ECHO_SCENARIO",
    "MODEL_ID",
    "NO_RESULT",
    "Fault",
    "FaultKind",
    "Latency",
    "Recording",
    "Scenario",
    "Script",
    "ScriptedModelServer",
    "ScriptedToolCall",
    "Turn",
    "demo_script",
    "serve",
]
