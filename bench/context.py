"""What context compression costs: summary calls and tokens per 100 turns of one long thread.

One thread of N turns (each about 50 model tokens of question and 50 of
answer) runs through the real services, in process, against the scripted
model, under a few budgets. The model server logs every prompt's size; the
figures are the summary calls and the tokens spent on them (prompt and
completion) per 100 turns, next to the tokens of the ordinary calls, and the
largest prompt any call sent (it must not exceed the budget). The scripted
summary is short (it quotes the fact it must keep), so completion tokens are
a floor; the prompt side, which dominates, is what a real model would see.

Run: ``python -m bench.context [--turns 300]``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import tempfile
import time
from pathlib import Path
from typing import Any

import grpc

from agentloop.kernel.settings import GatewaySettings, ReasonerSettings, ToolSettings
from agentloop.scripted_model import Scenario, Script, ScriptedModelServer, Turn
from agentloop.v1 import agent_pb2, agent_pb2_grpc
from bench.workload import publish
from gateway.api.server import create_server as create_gateway
from gateway.loop.compression import TRANSCRIPT_HEADER
from reasoner_svc.service import create_server as create_reasoner
from tool_svc.service import create_server as create_tools

OUT = Path(__file__).parent / "results" / "context.json"
FACT = "SECRET-4711"
SCRIPT = Script(
    scenarios=(
        Scenario(
            match=TRANSCRIPT_HEADER, turns=(Turn(content="The user's code is {{match:SECRET-[0-9]+}}."),)
        ),
        Scenario(match="what is my code", turns=(Turn(content="Your code is {{match:SECRET-[0-9]+}}."),)),
    )
)
BUDGETS = ((1000, 250), (4000, 1000))


def _text(turn: int, turns: int) -> str:
    if turn == 1:
        return f"my code is {FACT} so keep it in mind"
    if turn == turns:
        return "what is my code?"
    return f"turn {turn}: " + " ".join(f"w{turn}x{i}" for i in range(22))


async def _thread(turns: int, budget: int, keep: int) -> dict[str, Any]:
    model = ScriptedModelServer(SCRIPT)
    await model.start()
    tools = await create_tools(dataclasses.replace(ToolSettings(), port=0))
    reasoner = await create_reasoner(
        dataclasses.replace(ReasonerSettings(), port=0, base_url=model.base_url, max_retries=0)
    )
    database = f"sqlite+aiosqlite:///{tempfile.mkdtemp(prefix='agentloop-bench-')}/context.db"
    gateway = await create_gateway(
        dataclasses.replace(
            GatewaySettings(),
            port=0,
            reasoner_addr=f"127.0.0.1:{reasoner.port}",
            tools_addr=f"127.0.0.1:{tools.port}",
            database_url=database,
        )
    )
    options = agent_pb2.RunOptions(
        context_budget_tokens=budget,
        context_keep_recent_tokens=keep,
        disable_memory=True,
        stream_mode=agent_pb2.STREAM_MODE_NONE,
    )
    started = time.perf_counter()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{gateway.port}") as channel:
            stub = agent_pb2_grpc.AgentStub(channel)
            thread_id, reply = "", ""
            for turn in range(1, turns + 1):
                request = agent_pb2.InvokeRequest(
                    input=_text(turn, turns), thread_id=thread_id, user_id="bench", options=options
                )
                response = await stub.Invoke(request, timeout=60)
                thread_id, reply = response.thread_id, response.final.final_reply
    finally:
        await gateway.aclose(0)
        await reasoner.aclose(0)
        await tools.aclose(0)
        await model.stop()
    elapsed = time.perf_counter() - started
    summary = [_is_summary(body) for body in model.requests]
    sizes = model.prompt_sizes
    summary_prompt = sum(size for size, flag in zip(sizes, summary, strict=True) if flag)
    other_prompt = sum(size for size, flag in zip(sizes, summary, strict=True) if not flag)
    summary_completion = sum(len(text.split()) for text in _summaries(model))
    per100 = 100 / turns
    return {
        "budget_tokens": budget,
        "keep_recent_tokens": keep,
        "turns": turns,
        "fact_answered_at_last_turn": reply == f"Your code is {FACT}.",
        "max_prompt_tokens": max(sizes),
        "model_calls_per_100_turns": round(len(sizes) * per100, 1),
        "summary_calls_per_100_turns": round(sum(summary) * per100, 1),
        "summary_prompt_tokens_per_100_turns": round(summary_prompt * per100),
        "summary_completion_tokens_per_100_turns": round(summary_completion * per100),
        "other_prompt_tokens_per_100_turns": round(other_prompt * per100),
        "summary_share_of_prompt_tokens": round(summary_prompt / max(1, summary_prompt + other_prompt), 3),
        "seconds": round(elapsed, 1),
    }


def _is_summary(body: dict[str, Any]) -> bool:
    return any(
        m.get("role") == "user" and TRANSCRIPT_HEADER in str(m.get("content")) for m in body["messages"]
    )


def _summaries(model: ScriptedModelServer) -> list[str]:
    """The summary texts the scripted model wrote (rendered the way it answers them)."""
    return [
        SCRIPT.select(body["messages"], tools_offered=False).content
        for body in model.requests
        if _is_summary(body)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    args = parser.parse_args()
    results = [asyncio.run(_thread(args.turns, budget, keep)) for budget, keep in BUDGETS]
    publish({"threads": results}, OUT, model="scripted (prompt tokens = words)", turn_tokens="~50 + ~50")


if __name__ == "__main__":
    main()
