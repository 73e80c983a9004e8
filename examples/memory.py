"""Long-term memory: "remember that ..." is stored per user and recalled in later threads
(docs/memory.md). Written with agentloop.client."""

from __future__ import annotations

from _harness import Session, run_example, system_messages_sent, unique

from agentloop.client import Decision, Memory
from agentloop.testing import Scenario, Script, Turn

# With --self-contained the model just echoes; what matters is what the gateway sends it.
SCRIPT = Script(scenarios=(Scenario(match="", turns=(Turn(content="Noted: {{user}}"),)),))
# Users of this run only, so that running the example again starts from no memories.
ANA, BOB, LI = unique("ana"), unique("bob"), unique("li")


async def ask(session: Session, text: str, user: str, disable_memory: bool = False) -> None:
    async for event in session.client.run(text, user_id=user, options={"disable_memory": disable_memory}):
        if isinstance(event, Decision):
            print(f"  decision    {event.kind}: {event.detail}")
    if session.model is not None:
        facts = [t for t in system_messages_sent(session.model) if t.startswith("Facts")]
        print(f"  system message sent to the model: {facts[0]!r}" if facts else "  (no facts sent)")


async def memories(session: Session, user: str) -> list[Memory]:
    found = await session.client.memories(user_id=user)
    print(f"  memories of {user.split('-')[0]}: {[m.text for m in found]}")
    return found


async def main(session: Session) -> None:
    print("1. ana asks the agent to remember something:")
    await ask(session, "Remember that my favourite colour is green.", ANA)
    stored = await memories(session, ANA)

    print("2. a new thread for ana: the fact is recalled")
    await ask(session, "Which colour should my new bike be?", ANA)

    print("3. bob has no memories:")
    await ask(session, "Which colour should my new bike be?", BOB)

    print("4. a Chinese instruction, and the same with disable_memory=True:")
    await ask(session, "请记住我喜欢喝茶。", LI, disable_memory=True)
    await memories(session, LI)
    await ask(session, "请记住我喜欢喝茶。", LI)
    await memories(session, LI)

    print("5. ana deletes the fact; it is no longer recalled:")
    for memory in stored:
        await session.client.delete_memory(memory.memory_id, user_id=ANA)
    await memories(session, ANA)
    await ask(session, "Which colour should my new bike be?", ANA)


if __name__ == "__main__":
    run_example(main, SCRIPT)
