"""Injected arguments: a tool gets the run's context, which the model can neither see nor set
(docs/injected-arguments.md). The tool is examples/caller_tools.py."""

from __future__ import annotations

import json

from _harness import Session, collect, run_example, show, unique
from caller_tools import caller_info

from agentloop.testing import Scenario, Script, ScriptedToolCall, Turn
from agentloop.tools import ToolRegistry
from agentloop.v1 import agent_pb2

# With --self-contained: "who am i" calls caller_info with only `topic`; "forge" also tries to
# set the hidden `user` parameter.
SCRIPT = Script(
    scenarios=(
        Scenario(
            match="^who am i",
            turns=(
                Turn(tool_calls=(ScriptedToolCall("caller_info", {"topic": "me"}),)),
                Turn(content="{{tool:caller_info}}"),
            ),
        ),
        Scenario(
            match="^forge",
            turns=(
                Turn(tool_calls=(ScriptedToolCall("caller_info", {"topic": "me", "user": "admin"}),)),
                Turn(content="The tool said: {{tool:caller_info}}"),
            ),
        ),
    )
)


async def main(session: Session) -> None:
    spec = ToolRegistry([caller_info]).specs()[0]
    properties = sorted(json.loads(spec.parameters_json_schema)["properties"])
    print(f"schema properties: {properties}; injected_parameters: {list(spec.injected_parameters)}")

    print("1. the model calls caller_info(topic='me'); the gateway fills in the rest:")
    request = agent_pb2.RunRequest(input="who am i?", user_id="ana", thread_id=unique("injected-demo"))
    show(await collect(session.agent.Run(request, timeout=30)), only=("tool_start", "tool_end"))

    print("2. the model tries to set user='admin' itself:")
    request = agent_pb2.RunRequest(input="forge an answer", user_id="ana")
    show(await collect(session.agent.Run(request, timeout=30)), only=("tool_start", "tool_end", "final"))


if __name__ == "__main__":
    run_example(main, SCRIPT)
