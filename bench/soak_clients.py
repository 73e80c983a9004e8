"""The soak's clients: mixed workloads that follow each run to its end through broken streams.

Every run gets a thread id chosen by the client, so a client whose stream (or
Invoke) broke before it learned the run id can still find the run with
GetThread. A broken stream is resumed with Watch(after_sequence = the last
number seen) on whichever gateway answers. Everything a client sees is written
to a `RunRecord`: each event by sequence (its serialized bytes), each stream
with its numbers and how it ended. The checker compares those with what the
database kept once the chaos is over.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import grpc

from agentloop.scripted_model import Latency, Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2, agent_pb2_grpc, common_pb2

USER = "soak"
TERMINAL = ("final", "error", "interrupt")
ANSWER = "Finished after {{last_tool}}; " + " ".join(f"word{i}" for i in range(40)) + "."
# Channel options of the soak's clients: reconnect quickly to a gateway that was restarted.
CLIENT_CHANNEL_OPTIONS = (
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.min_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 1000),
)


def _round(
    workload: str, step: int, width: int, seconds: float, guarded: int = 0, plain_ids: bool = False
) -> Turn:
    """One round of `width` parallel calls; the first `guarded` ones need approval.

    With `plain_ids` the calls are named call_0, call_1… in every round, as an
    OpenAI-compatible server that sends no ids gets them named by the reasoner.
    """
    return Turn(
        tool_calls=tuple(
            ScriptedToolCall(
                "soak_guarded" if i < guarded else "soak_work",
                {"tag": f"{workload}-s{step}c{i}", "seconds": seconds},
                id=f"call_{i}" if plain_ids else None,
            )
            for i in range(width)
        )
    )


def soak_script() -> Script:
    """The model's side of every workload; the workload's name in the input selects it."""
    scenarios = {
        "stream": (_round("stream", 0, 2, 0.4), _round("stream", 1, 1, 0.2)),
        "invoke": (_round("invoke", 0, 3, 0.3),),
        "multi": tuple(_round("multi", s, 3, 0.3) for s in range(3)),
        "approve": (_round("approve", 0, 2, 0.3, guarded=1), _round("approve", 1, 1, 0.2)),
        "cancel": tuple(_round("cancel", s, 2, 0.8) for s in range(4)),
        "ids": tuple(_round("ids", s, 2, 0.2, plain_ids=True) for s in range(2)),
    }
    return Script(
        scenarios=tuple(
            Scenario(match=f"^soak-{name} ", name=name, turns=(*rounds, Turn(content=ANSWER)))
            for name, rounds in scenarios.items()
        ),
        latency=Latency(first_token_ms=20, per_token_ms=4, response_ms=20),
    )


WORKLOADS = ("stream", "invoke", "multi", "approve", "cancel", "ids")


def ending_kind(kinds: Sequence[str]) -> str:
    """How a sequence of events ends: its last kind, or "interrupt" for a pause.

    A pause emits the interrupt, then a decision and the tools node's end.
    """
    trimmed = list(kinds)
    while trimmed and trimmed[-1] in ("decision", "node_end"):
        trimmed.pop()
    if trimmed and trimmed[-1] == "interrupt":
        return "interrupt"
    return kinds[-1] if kinds else ""


@dataclass
class StreamRecord:
    """One server stream (Run, Resume or Watch) as the client saw it."""

    rpc: str
    gateway: str
    sequences: list[int] = field(default_factory=list)
    end: str = ""
    """'terminal:<kind>', 'broken:<status code>' or 'no-terminal' (closed OK without an end event)."""


@dataclass
class RunRecord:
    """Everything one client learned about one run."""

    workload: str
    thread_id: str
    run_id: str = ""
    started: float = 0.0
    ended: float | None = None
    outcome: str = ""
    """The last terminal event kind seen: final, error, interrupt (or 'invoke' for an Invoke reply)."""
    leave_paused: bool = False
    seen: dict[int, bytes] = field(default_factory=dict)
    conflicts: list[str] = field(default_factory=list)
    streams: list[StreamRecord] = field(default_factory=list)
    resumes: int = 0
    cancels: int = 0
    notes: list[str] = field(default_factory=list)


class Gateways(Protocol):
    """Where the clients send their calls (the fleet's live gateways)."""

    def addresses(self) -> Sequence[str]: ...


@dataclass
class Clients:
    """Runs `count` closed-loop clients until `stop_at`; each run is followed until `give_up_at`."""

    gateways: Gateways
    rng_seed: int
    leave_paused_rate: float = 0.1
    double_resume_rate: float = 0.3
    records: list[RunRecord] = field(default_factory=list)
    _channels: dict[str, grpc.aio.Channel] = field(default_factory=dict)
    give_up_at: float = 0.0

    def stub(self, addr: str) -> agent_pb2_grpc.AgentStub:
        if addr not in self._channels:
            self._channels[addr] = grpc.aio.insecure_channel(addr, options=CLIENT_CHANNEL_OPTIONS)
        return agent_pb2_grpc.AgentStub(self._channels[addr])

    async def close(self) -> None:
        for channel in self._channels.values():
            await channel.close()

    def remaining(self) -> float:
        return max(0.5, self.give_up_at - time.monotonic())

    async def drive(self, count: int, stop_at: float, give_up_at: float) -> None:
        self.give_up_at = give_up_at
        await asyncio.gather(*(self._client(i, stop_at) for i in range(count)))

    async def _client(self, index: int, stop_at: float) -> None:
        rng = random.Random(self.rng_seed * 1000 + index)
        n = 0
        while time.monotonic() < stop_at:
            n += 1
            record = RunRecord(workload=rng.choice(WORKLOADS), thread_id=f"soak-{index}-{n}")
            record.started = time.monotonic()
            self.records.append(record)
            try:
                await asyncio.wait_for(self._one_run(record, rng), timeout=self.remaining())
            except TimeoutError:
                record.notes.append("client gave up waiting for the run's end")
            if record.outcome in TERMINAL[:2] or record.outcome == "invoke":
                record.ended = time.monotonic()

    # --- one run ------------------------------------------------------------------------------------
    async def _one_run(self, record: RunRecord, rng: random.Random) -> None:
        options = agent_pb2.RunOptions(
            loop_detection=agent_pb2.LoopDetection(disabled=True),
            stream_mode=(
                agent_pb2.STREAM_MODE_ALL_STEPS if record.workload == "stream" else agent_pb2.STREAM_MODE_NONE
            ),
        )
        request = agent_pb2.RunRequest(
            input=f"soak-{record.workload} {record.thread_id}",
            user_id=USER,
            thread_id=record.thread_id,
            options=options,
        )
        canceller = None
        if record.workload == "cancel":
            canceller = asyncio.create_task(self._cancel_later(record, rng.uniform(0.5, 4.0), rng))
        try:
            if not await self._start(record, request, rng):
                return
        finally:
            if canceller is not None:
                canceller.cancel()
        if record.outcome != "interrupt":
            return
        if rng.random() < self.leave_paused_rate:
            record.leave_paused = True
            return
        while record.outcome == "interrupt":
            await self._resume(record, rng)

    async def _start(self, record: RunRecord, request: agent_pb2.RunRequest, rng: random.Random) -> bool:
        """Start the run (retrying where it surely did not start) and follow it to a terminal event."""
        for _attempt in range(20):
            addr = rng.choice(self.gateways.addresses())
            stub = self.stub(addr)
            if record.workload == "invoke":
                ended = await self._invoke(record, stub, addr, request)
            else:
                call = stub.Run(request, timeout=self.remaining())
                ended = await self._consume(record, call, "Run", addr)
            if ended:
                return True
            if not record.run_id and not await self._find_run(record, rng):
                await asyncio.sleep(0.3)
                continue  # the run was never created: start it again
            return await self._reattach(record, rng)
        record.notes.append("could not start the run")
        return False

    async def _invoke(
        self, record: RunRecord, stub: agent_pb2_grpc.AgentStub, addr: str, request: agent_pb2.RunRequest
    ) -> bool:
        invoke = agent_pb2.InvokeRequest(
            input=request.input, user_id=USER, thread_id=request.thread_id, options=request.options
        )
        stream = StreamRecord(rpc="Invoke", gateway=addr)
        record.streams.append(stream)
        try:
            reply = await stub.Invoke(invoke, timeout=self.remaining())
        except grpc.aio.AioRpcError as exc:
            stream.end = f"broken:{exc.code().name}"
            return False
        record.run_id = reply.run_id
        record.outcome = "invoke"
        stream.end = "terminal:invoke"
        return True

    async def _consume(self, record: RunRecord, call: Any, rpc: str, addr: str) -> bool:
        """Read one stream into the record; True when it ended with a terminal event."""
        stream = StreamRecord(rpc=rpc, gateway=addr)
        record.streams.append(stream)
        kinds: list[str] = []
        try:
            async for response in call:
                self._see(record, stream, response.event)
                kinds.append(str(response.event.WhichOneof("event")))
        except grpc.aio.AioRpcError as exc:
            stream.end = f"broken:{exc.code().name}"
            last_kind = ending_kind(kinds)
            if last_kind in TERMINAL:  # the end arrived; only the closing of the stream failed
                record.outcome = last_kind
                return True
            return False
        last_kind = ending_kind(kinds)
        if last_kind in TERMINAL:
            stream.end = f"terminal:{last_kind}"
            record.outcome = last_kind
            return True
        if await self._run_status(record, addr) == agent_pb2.RUN_STATUS_PAUSED:
            # A paused run streams nothing after its interrupt; the client decides and resumes it.
            stream.end = "paused"
            record.outcome = "interrupt"
            return True
        stream.end = "no-terminal"
        return False

    async def _run_status(self, record: RunRecord, addr: str) -> int:
        """The run's status as GetThread reports it (UNSPECIFIED when it cannot be read)."""
        try:
            reply = await self.stub(addr).GetThread(
                agent_pb2.GetThreadRequest(thread_id=record.thread_id, user_id=USER), timeout=5
            )
        except grpc.aio.AioRpcError:
            return agent_pb2.RUN_STATUS_UNSPECIFIED
        if reply.state.run_id != record.run_id:
            return agent_pb2.RUN_STATUS_UNSPECIFIED
        return int(reply.state.status)

    def _see(self, record: RunRecord, stream: StreamRecord, event: agent_pb2.RunEvent) -> None:
        record.run_id = record.run_id or event.run_id
        data = event.SerializeToString(deterministic=True)
        earlier = record.seen.get(event.sequence)
        if earlier is not None and earlier != data:
            other = agent_pb2.RunEvent.FromString(earlier)
            record.conflicts.append(
                f"sequence {event.sequence} seen as {other.WhichOneof('event')}, then as a different "
                f"{event.WhichOneof('event')} ({stream.rpc} on {stream.gateway})"
            )
        record.seen.setdefault(event.sequence, data)
        stream.sequences.append(event.sequence)

    async def _find_run(self, record: RunRecord, rng: random.Random) -> bool:
        """Learn the run id from the thread; False when the thread does not exist (nothing started)."""
        for _ in range(10):
            addr = rng.choice(self.gateways.addresses())
            try:
                reply = await self.stub(addr).GetThread(
                    agent_pb2.GetThreadRequest(thread_id=record.thread_id, user_id=USER), timeout=5
                )
            except grpc.aio.AioRpcError as exc:
                if exc.code() == grpc.StatusCode.NOT_FOUND:
                    return False
                await asyncio.sleep(0.5)
                continue
            if reply.state.run_id:
                record.run_id = reply.state.run_id
                return True
            await asyncio.sleep(0.5)
        return False

    def seen_ending(self, record: RunRecord) -> str:
        """How the events seen so far end (see ending_kind)."""
        return ending_kind(
            [
                str(agent_pb2.RunEvent.FromString(record.seen[n]).WhichOneof("event"))
                for n in sorted(record.seen)
            ]
        )

    def last_sequence(self, record: RunRecord) -> int:
        return max(record.seen, default=0)

    async def _reattach(self, record: RunRecord, rng: random.Random) -> bool:
        """Watch from the last number seen, on any gateway, until a terminal event arrives."""
        pause = 0.15
        while True:
            kind = self.seen_ending(record)
            if kind in ("final", "error"):
                record.outcome = kind
                return True
            addr = rng.choice(self.gateways.addresses())
            request = agent_pb2.WatchRequest(
                run_id=record.run_id, user_id=USER, after_sequence=self.last_sequence(record)
            )
            call = self.stub(addr).Watch(request, timeout=self.remaining())
            if await self._consume(record, call, "Watch", addr):
                return True
            if record.streams[-1].end == "no-terminal" and await self._ended_below(record, addr):
                return True
            pause = min(2.0, pause * 2)
            await asyncio.sleep(pause)

    async def _ended_below(self, record: RunRecord, addr: str) -> bool:
        """A run that ended although Watch after the last number seen shows no end: stop waiting for it.

        The stream that closed without an end is already on the record (streams_without_end).
        """
        status = await self._run_status(record, addr)
        if status == agent_pb2.RUN_STATUS_FAILED:
            record.outcome = "error"
        elif status in (agent_pb2.RUN_STATUS_COMPLETED, agent_pb2.RUN_STATUS_CANCELLED):
            record.outcome = "final"
        else:
            return False
        record.notes.append("run ended, but Watch after the last number seen showed no end")
        return True

    async def _resume(self, record: RunRecord, rng: random.Random) -> None:
        """Decide the pending calls (sometimes from two clients at once) and follow the run again."""
        pending = await self._pending(record, rng)
        if not pending:
            record.notes.append("paused run without a stored interrupt")
            await asyncio.sleep(1.0)
            return
        verdict = rng.choice(
            [agent_pb2.ApprovalDecision.VERDICT_APPROVE, agent_pb2.ApprovalDecision.VERDICT_REJECT]
        )
        request = agent_pb2.ResumeRequest(
            run_id=record.run_id,
            user_id=USER,
            decisions=[
                agent_pb2.ApprovalDecision(tool_call_id=c.id, verdict=verdict, reason="soak says no")
                for c in pending
            ],
        )
        copies = 2 if rng.random() < self.double_resume_rate else 1
        record.resumes += copies
        record.outcome = ""
        addrs = [rng.choice(self.gateways.addresses()) for _ in range(copies)]
        calls = [self.stub(a).Resume(request, timeout=self.remaining()) for a in addrs]
        ended = await asyncio.gather(
            *(self._consume(record, c, "Resume", a) for c, a in zip(calls, addrs, strict=True))
        )
        if any(ended) and record.outcome:
            return
        await asyncio.sleep(0.3)
        await self._reattach(record, rng)

    async def _pending(self, record: RunRecord, rng: random.Random) -> list[common_pb2.ToolCall]:
        """The calls waiting for a decision: those of the last interrupt the store kept."""
        addr = rng.choice(self.gateways.addresses())
        try:
            events = [e async for e in stored_events(self.stub(addr), record.run_id, self.remaining())]
        except grpc.aio.AioRpcError:
            return []
        interrupts = [e.interrupt for e in events if e.WhichOneof("event") == "interrupt"]
        return list(interrupts[-1].pending) if interrupts else []

    async def _cancel_later(self, record: RunRecord, delay_s: float, rng: random.Random) -> None:
        await asyncio.sleep(delay_s)
        for _ in range(1200):  # the run id arrives with the run's first event
            if record.run_id:
                break
            await asyncio.sleep(0.1)
        for _ in range(10):
            addr = rng.choice(self.gateways.addresses())
            try:
                await self.stub(addr).Cancel(
                    agent_pb2.CancelRequest(run_id=record.run_id, user_id=USER), timeout=5
                )
                record.cancels += 1
                return
            except grpc.aio.AioRpcError:
                await asyncio.sleep(0.5)


async def stored_events(
    stub: agent_pb2_grpc.AgentStub, run_id: str, timeout_s: float = 30
) -> AsyncIterator[agent_pb2.RunEvent]:
    """A run's events as the gateway replays them from the store (then live ones until it ends or pauses)."""
    request = agent_pb2.WatchRequest(run_id=run_id, user_id=USER, after_sequence=0)
    async for response in stub.Watch(request, timeout=timeout_s):
        yield response.event
