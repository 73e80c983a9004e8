"""Live terminal rendering of a run's event stream (what `agentloop ask` prints)."""

from __future__ import annotations

import json
import sys
from typing import TextIO

from google.rpc import code_pb2

from agentloop.v1 import agent_pb2

_DIM = "\033[2m"
_RESET = "\033[0m"


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class EventRenderer:
    """Prints tokens as they stream, one line per tool event, and a summary at the end."""

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
        self.final: agent_pb2.RunFinal | None = None
        self.error: agent_pb2.RunError | None = None

    def _dim(self, text: str) -> str:
        return f"{_DIM}{text}{_RESET}" if self._color else text

    def _line(self, text: str) -> None:
        if self._in_text or self._in_reasoning:
            self._out.write("\n")
            self._in_text = self._in_reasoning = False
        self._out.write(text + "\n")
        self._out.flush()

    def handle(self, event: agent_pb2.RunEvent) -> None:
        """Render one event."""
        kind = event.WhichOneof("event")
        if kind == "llm_token":
            tok = event.llm_token
            if tok.reasoning_token:
                if not self._in_reasoning:
                    if self._in_text:
                        self._out.write("\n")
                        self._in_text = False
                    self._out.write(self._dim("thinking: "))
                    self._in_reasoning = True
                self._out.write(self._dim(tok.reasoning_token))
            if tok.token:
                if self._in_reasoning or not self._in_text:
                    if self._in_reasoning:
                        self._out.write("\n")
                    self._in_reasoning = False
                    self._in_text = True
                self._out.write(tok.token)
                self._streamed.append(tok.token)
            self._out.flush()
        elif kind == "tool_start":
            ts = event.tool_start
            self._streamed.clear()
            self._line(f"→ {ts.name}({_short(ts.arguments_json, 80)})  [{ts.tool_call_id}]")
        elif kind == "tool_end":
            result = event.tool_end.result
            mark = "✗" if result.is_error else "✓"
            self._line(
                f"{mark} {result.name}: {_short(result.content)}"
                f"  ({result.duration.ToNanoseconds() / 1e6:.1f} ms)"
            )
        elif kind in ("node_start", "node_end") and self._show_nodes:
            node = event.node_start if kind == "node_start" else event.node_end
            self._line(self._dim(f"[{kind} {node.node} step={node.step}]"))
        elif kind == "final":
            self.final = event.final
            if "".join(self._streamed) != event.final.final_reply:
                self._line(event.final.final_reply)
            md = event.final.metadata
            summary = {
                "steps_taken": md.steps_taken,
                "tools_used": list(md.tools_used),
                "stop_reason": agent_pb2.StopReason.Name(md.stop_reason).removeprefix("STOP_REASON_").lower(),
                "llm_calls": md.llm_calls,
            }
            self._line(self._dim(f"— {json.dumps(summary)}"))
        elif kind == "error":
            self.error = event.error
            self._line(
                f"error [{code_pb2.Code.Name(event.error.code)}] in {event.error.node}: {event.error.message}"
            )
