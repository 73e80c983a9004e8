"""A restaurant assistant: three tools, one thread, streamed answers, bookings approved by a person."""

import sys
from collections.abc import Callable

from agentloop.client import Client, Error, Final, Interrupt, Token, ToolFinished, approve, reject


def turn(client: Client, thread: str, text: str, ask: Callable[[str], str] = input) -> str:
    """One turn on the thread: stream it, ask before each booking, return the reply."""
    stream = client.run(text, thread_id=thread)
    while True:
        for event in stream:
            match event:
                case Token(text=token):
                    print(token, end="", flush=True)
                case ToolFinished(name=name, content=content):
                    print(f"[{name}] {content}")
                case Interrupt(pending=calls):
                    ok = [c for c in calls if ask(f"{c.name}({c.arguments_json})? y/n ") == "y"]
                    decisions = [approve(c) if c in ok else reject(c, "declined") for c in calls]
                    stream = client.resume(event.run_id, decisions)
                case Final(reply=reply):
                    return reply
                case Error(message=message):
                    raise RuntimeError(message)


if __name__ == "__main__":
    with Client() as client:
        while text := input("> "):
            print("\n" + turn(client, sys.argv[1] if len(sys.argv) > 1 else "restaurant", text))
