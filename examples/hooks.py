"""Hooks: code the gateway runs around each model call and each tool round (docs/hooks.md).

The custom hooks are in examples/my_hooks.py; with --self-contained the gateway is started as if
with AGENTLOOP_HOOK_MODULES=my_hooks and AGENTLOOP_HOOKS=redact_secrets.
"""

from __future__ import annotations

from _harness import Session, collect, run_example, show, system_messages_sent

from agentloop.scripted_model import Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2

# `leak` (a test tool) returns 'config: api_key="sk-live-0123456789abcdefghij" region=eu'.
SCRIPT = Script(
    scenarios=(
        Scenario(
            match="config",
            turns=(Turn(tool_calls=(ScriptedToolCall("leak", {}),)), Turn(content="It says {{last_tool}}")),
        ),
    )
)


async def run(session: Session, hooks: list[str]) -> None:
    request = agent_pb2.RunRequest(
        input="What is in the config?", user_id="ana", options=agent_pb2.RunOptions(hooks=hooks)
    )
    show(await collect(session.agent.Run(request, timeout=30)), only=("tool_end", "decision", "final"))


async def main(session: Session) -> None:
    print("1. no RunOptions.hooks: the gateway's default hooks run (here redact_secrets):")
    await run(session, [])

    print("2. hooks=['audit', 'house_style', 'sign'] replaces the defaults, so nothing is redacted:")
    await run(session, ["audit", "house_style", "sign"])
    if session.model is not None:
        print(f"  last system message the model got: {system_messages_sent(session.model)[-1]!r}")

    print("3. hooks=['redact_secrets', 'audit', 'sign']: built-in and custom hooks together:")
    await run(session, ["redact_secrets", "audit", "sign"])


if __name__ == "__main__":
    run_example(main, SCRIPT, gateway={"hook_modules": ("my_hooks",), "hooks": ("redact_secrets",)})
