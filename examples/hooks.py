"""Hooks: code the gateway runs around each model call and each tool round (docs/hooks.md).

The custom hooks are in examples/my_hooks.py; with --self-contained the gateway is started as if
with AGENTLOOP_HOOK_MODULES=my_hooks, AGENTLOOP_HOOKS=redact_secrets (the operator's hook, which
every run gets) and AGENTLOOP_CLIENT_HOOKS=audit,house_style,sign (the hooks a client may add).
"""

from __future__ import annotations

from _harness import RpcError, Session, collect, run_example, show, system_messages_sent

from agentloop.testing import Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2

CLIENT_HOOKS = ("audit", "house_style", "sign")

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
    print("1. no RunOptions.hooks: the operator's hooks run (here redact_secrets):")
    await run(session, [])

    print("2. hooks=['audit', 'house_style', 'sign'] are added; redact_secrets still runs first:")
    await run(session, ["audit", "house_style", "sign"])
    if session.model is not None:
        print(f"  last system message the model got: {system_messages_sent(session.model)[-1]!r}")

    print("3. hooks=['shout']: a hook the operator did not let clients add is refused:")
    try:
        await run(session, ["shout"])
    except RpcError as exc:
        print(f"  {exc.code().name}: {exc.details()}")


if __name__ == "__main__":
    gateway = {"hook_modules": ("my_hooks",), "hooks": ("redact_secrets",), "client_hooks": CLIENT_HOOKS}
    run_example(main, SCRIPT, gateway=gateway)
