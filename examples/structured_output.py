"""Structured output: the answer must be a JSON object matching a schema (docs/structured-output.md)."""

from __future__ import annotations

from _harness import RpcError, Session, collect, compact, run_example, show

from agentloop.client import dict_to_struct, struct_to_dict
from agentloop.testing import Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}, "unit": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}


def finish(arguments: dict[str, object], content: str = "") -> Turn:
    return Turn(content=content, tool_calls=(ScriptedToolCall("final_answer", arguments),))


# With --self-contained the model computes, then answers twice in a wrong shape before it fits.
SCRIPT = Script(
    scenarios=(
        Scenario(
            match="height",
            turns=(
                Turn(tool_calls=(ScriptedToolCall("calculator", {"expression": "6 * 7"}),)),
                finish({"answer": "forty-two"}),
                finish({"unit": "m"}),
                finish({"answer": 42, "unit": "m"}, content="The wall is 42 metres high."),
            ),
        ),
    )
)


async def main(session: Session) -> None:
    print(f"output_schema = {compact(SCHEMA)}")
    request = agent_pb2.RunRequest(
        input="How high is a wall of 6 floors of 7 metres? Give the height and its unit.",
        options=agent_pb2.RunOptions(output_schema=dict_to_struct(SCHEMA)),
    )
    events = await collect(session.agent.Run(request, timeout=30))
    show(events, only=("tool_start", "decision", "final"))
    final = events[-1].final
    if final.HasField("structured_output"):
        answer = struct_to_dict(final.structured_output)
        print(f"parsed: answer={answer['answer']} unit={answer.get('unit')}")
    if session.model is not None:
        choices = {str(r.get("tool_choice")) for r in session.model.requests}
        print(f"tool_choice sent with every model call: {sorted(choices)}")

    print("an invalid schema is refused before the run starts:")
    bad = agent_pb2.RunRequest(
        input="x", options=agent_pb2.RunOptions(output_schema=dict_to_struct({"type": 12}))
    )
    try:
        await collect(session.agent.Run(bad, timeout=30))
    except RpcError as exc:
        print(f"  {exc.code().name}: {exc.details()}")


if __name__ == "__main__":
    run_example(main, SCRIPT)
