"""Long-term memory: "remember that ..." is stored per user and recalled in later threads
(docs/memory.md)."""

from __future__ import annotations

from _harness import Session, collect, run_example, show, system_messages_sent

from agentloop.scripted_model import Scenario, Script, Turn
from agentloop.v1 import agent_pb2

# With --self-contained the model just echoes; what matters is what the gateway sends it.
SCRIPT = Script(scenarios=(Scenario(match="", turns=(Turn(content="Noted: {{user}}"),)),))


async def ask(session: Session, text: str, user: str, disable_memory: bool = False) -> None:
    request = agent_pb2.RunRequest(
        input=text, user_id=user, options=agent_pb2.RunOptions(disable_memory=disable_memory)
    )
    show(await collect(session.agent.Run(request, timeout=30)), only=("decision",))
    if session.model is not None:
        facts = [t for t in system_messages_sent(session.model) if t.startswith("Facts")]
        print(f"  system message sent to the model: {facts[0]!r}" if facts else "  (no facts sent)")


async def memories(session: Session, user: str) -> list[agent_pb2.Memory]:
    reply = await session.agent.ListMemories(agent_pb2.ListMemoriesRequest(user_id=user), timeout=10)
    print(f"  ListMemories({user!r}): {[m.text for m in reply.memories]}")
    return list(reply.memories)


async def main(session: Session) -> None:
    print("1. ana asks the agent to remember something:")
    await ask(session, "Remember that my favourite colour is green.", "ana")
    stored = await memories(session, "ana")

    print("2. a new thread for ana: the fact is recalled")
    await ask(session, "Which colour should my new bike be?", "ana")

    print("3. bob has no memories:")
    await ask(session, "Which colour should my new bike be?", "bob")

    print("4. a Chinese instruction, and the same with disable_memory=True:")
    await ask(session, "请记住我喜欢喝茶。", "li", disable_memory=True)
    await memories(session, "li")
    await ask(session, "请记住我喜欢喝茶。", "li")
    await memories(session, "li")

    print("5. ana deletes the fact; it is no longer recalled:")
    for memory in stored:
        await session.agent.DeleteMemory(
            agent_pb2.DeleteMemoryRequest(user_id="ana", memory_id=memory.memory_id), timeout=10
        )
    await memories(session, "ana")
    await ask(session, "Which colour should my new bike be?", "ana")


if __name__ == "__main__":
    run_example(main, SCRIPT)
