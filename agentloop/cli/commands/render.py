"""Live terminal rendering of a run's events (what `agentloop ask`, `watch` and `approve` print)."""

from __future__ import annotations

import json
import sys
from typing import TextIO

from agentloop.client import (
    Decision,
    Error,
    Event,
    Final,
    Interrupt,
    NodeFinished,
    NodeStarted,
    Token,
    ToolFinished,
    ToolStarted,
)

_DIM = "\033[2m"
_RESET = "\033[0m"


def short(text: str, limit: int = 120) -> str:
    """One line of at most `limit` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class EventRenderer:
    """Prints tokens as they stream, one line per tool event and decision, and a summary at the end."""

    def __init__(
        self, out: TextIO | None = None, color: bool | None = None, show_nodes: bool = False
    ) -> None:
        out = sys.stdout if out is None else out
        self._out = out
        self._color = out.isatty() if color is None else color
        self._show_nodes = show_nodes
        self._in_text = False
        self._in_reasoning = False
        self._streamed: list[str] = []  # content tokens since the last tool round
        self.final: Final | None = None
        self.error: Error | None = None
        self.interrupt: Interrupt | None = None
        self.run_id = ""
        self.thread_id = ""
        self.last_sequence = 0

    def _dim(self, text: str) -> str:
        return f"{_DIM}{text}{_RESET}" if self._color else text

    def line(self, text: str) -> None:
        """Print a line of its own (ending a line of streamed tokens first)."""
        if self._in_text or self._in_reasoning:
            self._out.write("\n")
            self._in_text = self._in_reasoning = False
        self._out.write(text + "\n")
        self._out.flush()

    def _token(self, event: Token) -> None:
        if event.reasoning:
            if not self._in_reasoning:
                if self._in_text:
                    self._out.write("\n")
                    self._in_text = False
                self._out.write(self._dim("thinking: "))
                self._in_reasoning = True
            self._out.write(self._dim(event.reasoning))
        if event.text:
            if self._in_reasoning or not self._in_text:
                if self._in_reasoning:
                    self._out.write("\n")
                self._in_reasoning = False
                self._in_text = True
            self._out.write(event.text)
            self._streamed.append(event.text)
        self._out.flush()

    def handle(self, event: Event) -> None:
        """Render one event."""
        self.run_id, self.thread_id, self.last_sequence = event.run_id, event.thread_id, event.sequence
        if isinstance(event, Token):
            self._token(event)
        elif isinstance(event, ToolStarted):
            self._streamed.clear()
            self.line(f"→ {event.name}({short(event.arguments_json, 80)})  [{event.tool_call_id}]")
        elif isinstance(event, ToolFinished):
            mark = "✗" if event.is_error else "✓"
            self.line(f"{mark} {event.name}: {short(event.content)}  ({event.duration_ms:.1f} ms)")
        elif isinstance(event, NodeStarted | NodeFinished):
            if isinstance(event, NodeStarted):
                self.interrupt = None  # a paused run that was resumed (Watch replays both)
            if self._show_nodes:
                kind = "node_start" if isinstance(event, NodeStarted) else "node_end"
                self.line(self._dim(f"[{kind} {event.node} step={event.step}]"))
        elif isinstance(event, Decision):
            self.line(f"◆ {event.kind}: {short(event.detail, 200)}")
        elif isinstance(event, Interrupt):
            self.interrupt = event
            self.line(f"⏸ paused: {event.reason}")
            for call in event.pending:
                self.line(f"  {call.name}({short(call.arguments_json, 100)})  [{call.tool_call_id}]")
        elif isinstance(event, Final):
            self._final(event)
        elif isinstance(event, Error):
            self.error = event
            self.line(f"error [{event.code}] in {event.node}: {event.message}")

    def _final(self, event: Final) -> None:
        self.final = event
        if "".join(self._streamed) != event.reply:
            self.line(event.reply)
        if event.structured_output_json:
            self.line(event.structured_output_json)
        summary = {
            "steps_taken": event.steps_taken,
            "tools_used": list(event.tools_used),
            "stop_reason": event.stop_reason,
            "llm_calls": event.llm_calls,
            "thread_id": event.thread_id,
            "run_id": event.run_id,
        }
        self.line(self._dim(f"— {json.dumps(summary)}"))
