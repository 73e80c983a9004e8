"""Run events as clients see them: numbered, stamped with run and thread, delivered in order.

The sink is synchronous on purpose: a node that emits a token must not wait
for the client, and the numbering must not depend on scheduling. Delivery is
a plain callback (a queue's put_nowait for Run, nothing for Invoke).
"""

from __future__ import annotations

from collections.abc import Callable

from agentloop.v1 import agent_pb2, common_pb2

Deliver = Callable[[agent_pb2.RunResponse], None]


class EventSink:
    """Builds RunResponse events with a gap-free sequence and hands them to `deliver`."""

    def __init__(self, run_id: str, thread_id: str, deliver: Deliver | None = None) -> None:
        self.run_id = run_id
        self.thread_id = thread_id
        self._deliver = deliver
        self.sequence = 0

    def _new(self) -> agent_pb2.RunResponse | None:
        if self._deliver is None:
            return None
        self.sequence += 1
        return agent_pb2.RunResponse(run_id=self.run_id, sequence=self.sequence, thread_id=self.thread_id)

    def _send(self, event: agent_pb2.RunResponse) -> None:
        assert self._deliver is not None
        self._deliver(event)

    def node_start(self, node: str, step: int) -> None:
        """A node of the graph begins."""
        if (ev := self._new()) is not None:
            ev.node_start.node = node
            ev.node_start.step = step
            self._send(ev)

    def node_end(self, node: str, step: int, duration_ms: float) -> None:
        """A node of the graph finished."""
        if (ev := self._new()) is not None:
            ev.node_end.node = node
            ev.node_end.step = step
            ev.node_end.duration_ms = duration_ms
            self._send(ev)

    def token(self, step: int, token: str = "", reasoning_token: str = "") -> None:
        """A piece of streamed model output."""
        if (ev := self._new()) is not None:
            ev.llm_token.token = token
            ev.llm_token.reasoning_token = reasoning_token
            ev.llm_token.step = step
            self._send(ev)

    def tool_start(self, tool: str, args_json: str, call_id: str) -> None:
        """A tool call began running."""
        if (ev := self._new()) is not None:
            ev.tool_start.tool = tool
            ev.tool_start.args_json = args_json
            ev.tool_start.id = call_id
            self._send(ev)

    def tool_end(self, result: common_pb2.ToolResult) -> None:
        """A tool call produced its one result."""
        if (ev := self._new()) is not None:
            ev.tool_end.tool = result.name
            ev.tool_end.id = result.tool_call_id
            ev.tool_end.result.CopyFrom(result)
            self._send(ev)

    def final(self, final: agent_pb2.RunFinal) -> None:
        """The run's outcome; the last event of a successful run."""
        if (ev := self._new()) is not None:
            ev.final.CopyFrom(final)
            self._send(ev)

    def error(self, code: str, message: str, node: str) -> None:
        """The run failed; the last event of a failed run."""
        if (ev := self._new()) is not None:
            ev.error.code = code
            ev.error.message = message
            ev.error.node = node
            self._send(ev)
