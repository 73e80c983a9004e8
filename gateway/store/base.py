"""The store's interface and row types, shared by every backend.

A run is persisted as append-only pieces: each message of a thread once
(`messages`), one fixed-size `CheckpointRecord` per node transition, each tool
result as it finishes, and the run's events. Writing a step therefore costs the
same whatever the run's length, and a run can be rebuilt from its newest
checkpoint plus the thread's messages.

Ownership: a RUNNING run has an `owner` (a gateway instance id) whose lease
expires unless renewed by `heartbeat`. A run whose lease expired is an orphan
that any gateway may claim, exactly one succeeding.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from agentloop.internal.v1 import checkpoint_pb2
from agentloop.kernel.errors import AgentloopError
from agentloop.v1 import agent_pb2, common_pb2


class RunStatus(enum.StrEnum):
    """Stored status of a run (mirrors agentloop.v1.RunStatus)."""

    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    PAUSED = "paused"
    """Waiting for a human decision; nobody executes it and it holds no lease until Resume."""

    @property
    def ended(self) -> bool:
        """Not executing and owned by nobody: finished, or PAUSED (which Resume can restart)."""
        return self in (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.PAUSED)

    @property
    def finished(self) -> bool:
        """Over for good: COMPLETED, FAILED or CANCELLED."""
        return self in (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED)


class LeaseLost(AgentloopError):
    """The caller no longer owns the run (its lease expired and another gateway claimed it)."""


class RequestReplayed(Exception):
    """A run with this request id already exists for the user: attach to `run_id` instead."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"request already started run {run_id}")
        self.run_id = run_id


class ThreadBusy(AgentloopError):
    """The thread already has a RUNNING run."""


@dataclass(frozen=True)
class ThreadRow:
    thread_id: str
    user_id: str
    created_at: datetime
    updated_at: datetime
    message_count: int


@dataclass(frozen=True)
class RunRow:
    run_id: str
    thread_id: str
    user_id: str
    status: RunStatus
    request: bytes
    """Serialized agentloop.v1.RunRequest the run was started with (its options)."""
    owner: str | None
    lease_expires_at: datetime | None
    cancel_requested: bool
    checkpoint_count: int
    last_sequence: int
    created_at: datetime
    updated_at: datetime
    sequence_reserved: int = 0
    """Event numbers up to here may have reached clients; a new owner numbers above it."""
    request_id: str | None = None
    """The client's idempotency key the run was started with (unique per user), if any."""
    resume_request_id: str | None = None
    """The idempotency key of the Resume that last continued the run, if it had one."""
    resume_sequence: int = 0
    """The event number that Resume's stream started after."""

    @property
    def next_sequence_base(self) -> int:
        """Where a gateway taking the run over starts numbering: above every number ever handed out."""
        return max(self.last_sequence, self.sequence_reserved)


@dataclass(frozen=True)
class CheckpointRow:
    run_id: str
    thread_id: str
    index: int
    """1-based position within the run."""
    record: checkpoint_pb2.CheckpointRecord
    delta_bytes: int
    """Bytes this checkpoint added: the record plus the messages appended with it."""
    created_at: datetime
    position: int
    """Store-wide write order (an autoincrement key); the page cursor of list_checkpoints."""

    @property
    def checkpoint_id(self) -> str:
        return f"{self.run_id}:{self.index}"


@dataclass(frozen=True)
class CheckpointWrite:
    """What one node transition adds, written in ONE transaction."""

    run_id: str
    owner: str
    record: checkpoint_pb2.CheckpointRecord
    new_messages: Sequence[common_pb2.Message] = ()
    events: Sequence[agent_pb2.RunEvent] = ()
    status: RunStatus | None = None
    """Set to end the run (COMPLETED/FAILED/CANCELLED) in the same transaction."""
    sequence_reserved: int = 0
    """Raise the run's reserved event numbers to at least this (ignored when `status` ends the run)."""
    tool_results: Sequence[common_pb2.ToolResult] = ()
    """Finished tool calls recorded with the transition, as `record_tool_results` records them: a
    round's last results, arriving just before the checkpoint that ends the tools node, cost no
    transaction of their own."""
    index: int | None = None
    """The run's checkpoint number this write becomes (its count so far + 1), when the writer
    knows it: the write then happens only at that count, so a retry of a write whose COMMIT went
    through unacknowledged finds it done (and returns the run) instead of writing it twice."""


@dataclass(frozen=True)
class Memory:
    """A fact a user asked the agent to remember, recalled in the user's later runs.

    Recall ranks them (`gateway.loop.memory`).
    """

    memory_id: str
    user_id: str
    text: str
    created_at: datetime


@dataclass(frozen=True)
class PruneStats:
    checkpoints_deleted: int = 0
    threads_deleted: int = 0


@dataclass(frozen=True)
class StorageStats:
    """Bytes stored for one run, by table (payload bytes, not counting indexes)."""

    checkpoint_bytes: int = 0
    message_bytes: int = 0
    event_bytes: int = 0
    tool_result_bytes: int = 0
    by_checkpoint: list[int] = field(default_factory=list)

    @property
    def state_bytes(self) -> int:
        """Checkpoint + message bytes: what a checkpointer must keep to restore state."""
        return self.checkpoint_bytes + self.message_bytes


class Store(abc.ABC):
    """The gateway's persistence; `gateway.store.sql.SqlStore` implements it for Postgres and SQLite.

    Every method is one short transaction on a pooled engine; none takes a
    process-wide lock, so concurrent runs write in parallel.
    """

    # --- threads -----------------------------------------------------------
    # A thread is named by its user and the client's id together (see
    # `gateway.store.scope`): users' thread ids never collide, so one user's
    # ids neither leak to nor block another.
    @abc.abstractmethod
    async def get_thread(self, thread_id: str, *, user_id: str) -> ThreadRow | None:
        """`user_id`'s thread `thread_id`, or None."""
        ...

    @abc.abstractmethod
    async def create_thread(self, thread_id: str, user_id: str) -> ThreadRow:
        """Create `user_id`'s thread; returns the existing row unchanged if it already exists."""
        ...

    @abc.abstractmethod
    async def thread_messages(
        self, thread_id: str, limit: int | None = None, *, user_id: str, offset: int = 0
    ) -> list[common_pb2.Message]:
        """The thread's messages, oldest first, from position `offset`; with `limit`, at most that many."""
        ...

    # --- runs --------------------------------------------------------------
    @abc.abstractmethod
    async def create_run(
        self,
        run_id: str,
        thread_id: str,
        user_id: str,
        request: bytes,
        *,
        owner: str | None = None,
        lease_s: float = 30.0,
        request_id: str | None = None,
        reserve: int = 0,
    ) -> RunRow:
        """Insert a QUEUED run; with `owner`, a RUNNING one leased to `owner` for `lease_s`.

        `reserve`: with `owner`, event numbers up to it are reserved for the
        owner at once (as `start_run` does), saving the run its first
        reservation write.

        `request_id`: the client's idempotency key, unique per user. When the
        user already has a run with that key, nothing is inserted and
        RequestReplayed names that run (the database decides between
        concurrent retries).

        The same call again (a retry whose commit was not acknowledged)
        returns the run it created; another run with this `run_id` is
        FailedPrecondition.

        Creating a run already started is how a run that must not wait (the
        REJECT policy) is admitted: on a thread that has a RUNNING run it
        raises ThreadBusy and leaves no run behind, so a refused request never
        shows up as the thread's latest run.
        """
        ...

    @abc.abstractmethod
    async def start_run(self, run_id: str, owner: str, lease_s: float, reserve: int = 0) -> RunRow:
        """QUEUED → RUNNING owned by `owner`; raises ThreadBusy while the thread has a RUNNING run.

        At most one RUNNING run per thread is guaranteed by the database (a
        partial unique index), not by the caller. `reserve`: event numbers
        reserved for the owner from the start (saves it a write).
        """
        ...

    @abc.abstractmethod
    async def get_run(self, run_id: str) -> RunRow | None:
        """The run, or None."""
        ...

    @abc.abstractmethod
    async def latest_run(self, thread_id: str, *, user_id: str) -> RunRow | None:
        """The thread's most recently created run, or None."""
        ...

    @abc.abstractmethod
    async def mark_resumed(self, run_id: str, request_id: str, after_sequence: int) -> None:
        """Remember that Resume `request_id` continued the run, streaming events after `after_sequence`."""
        ...

    @abc.abstractmethod
    async def run_by_request(self, user_id: str, request_id: str) -> RunRow | None:
        """The user's run started with idempotency key `request_id`, or None."""
        ...

    @abc.abstractmethod
    async def list_runs(
        self, thread_id: str, limit: int, after: tuple[datetime, str] | None = None, *, user_id: str
    ) -> list[RunRow]:
        """A page of the thread's runs, newest first (by creation, then run id): those after `after`.

        `after` is the (created_at, run_id) of the last run of the previous page.
        """
        ...

    @abc.abstractmethod
    async def fork_thread(
        self,
        thread_id: str,
        new_thread_id: str,
        upto: int,
        *,
        user_id: str,
        closing: Sequence[common_pb2.Message] = (),
    ) -> ThreadRow:
        """Copy the first `upto` messages of the user's thread into a new thread `new_thread_id`, atomically.

        `closing` messages are appended to the copy in the same transaction
        (the results that close tool calls the copy leaves open, see
        `gateway.runs.forking`).

        The copy has no runs and shares nothing with the original. Raises
        NotFound for an unknown thread and AlreadyExists when `new_thread_id`
        is taken.
        """
        ...

    @abc.abstractmethod
    async def list_threads(
        self, user_id: str, limit: int, after: tuple[datetime, str] | None = None
    ) -> list[ThreadRow]:
        """A page of the user's threads, most recently updated first (then by id, descending).

        `after` is the (updated_at, thread_id) of the last thread of the previous page.
        """
        ...

    @abc.abstractmethod
    async def write_checkpoint(self, write: CheckpointWrite) -> RunRow:
        """Append a checkpoint (+ its messages, events, optional final status) atomically.

        Renews the lease. Raises LeaseLost when `write.owner` no longer owns the
        run. Returns the updated run (callers read `cancel_requested` from it).
        With `write.index`, writing the same checkpoint again is a no-op that
        returns the run as it is.
        """
        ...

    @abc.abstractmethod
    async def record_tool_result(self, run_id: str, owner: str, result: common_pb2.ToolResult) -> None:
        """Persist one finished tool call (idempotent per (run_id, tool_call_id): the first write wins)."""
        ...

    @abc.abstractmethod
    async def record_tool_results(
        self, run_id: str, owner: str, results: Sequence[common_pb2.ToolResult]
    ) -> None:
        """Persist several finished tool calls in ONE transaction (one commit for a step's parallel calls).

        Same contract as `record_tool_result` for each: first write wins per
        (run_id, tool_call_id), including a call id repeated within `results`;
        recording order is the order given. Renews the lease; raises LeaseLost,
        having written nothing, when `owner` no longer owns the RUNNING run. An
        empty `results` is a no-op (no owner check, no lease renewal).
        """
        ...

    @abc.abstractmethod
    async def tool_results(self, run_id: str) -> dict[str, common_pb2.ToolResult]:
        """Finished tool calls of the run by tool_call_id, in the order they were recorded."""
        ...

    @abc.abstractmethod
    async def request_cancel(self, run_id: str) -> RunRow:
        """Set cancel_requested; a QUEUED run, or a RUNNING one whose lease expired, is CANCELLED at once."""
        ...

    @abc.abstractmethod
    async def set_status(self, run_id: str, status: RunStatus) -> RunRow:
        """Force a status (used to end a run that has no live owner); clears the owner when ended."""
        ...

    @abc.abstractmethod
    async def end_run(
        self,
        run_id: str,
        status: RunStatus,
        events: Sequence[agent_pb2.RunEvent],
        *,
        owner: str,
        unstarted: bool = False,
    ) -> bool:
        """End a QUEUED or RUNNING run with its closing events, in one compare-and-set; True if it did.

        Only while `owner` holds the run (or nobody does, QUEUED) and, with
        `unstarted`, before its first checkpoint: the status and the events
        are written together or not at all, so a client never reads an ending
        event of a run that went on, nor an ended run without its ending.
        """
        ...

    # --- ownership ---------------------------------------------------------
    @abc.abstractmethod
    async def heartbeat(self, owner: str, lease_s: float, run_ids: Sequence[str]) -> int:
        """Renew the leases of those of `run_ids` that are RUNNING under `owner`; returns how many.

        Only runs the caller is executing right now: a run it owns but no
        longer executes (its setup failed, its store writes gave up) must let
        its lease expire, so that some gateway's orphan scan takes it over.
        """
        ...

    @abc.abstractmethod
    async def claim_paused(
        self, run_id: str, owner: str, lease_s: float, request_id: str | None = None
    ) -> bool:
        """PAUSED → RUNNING under `owner` in one compare-and-set; True for exactly one caller.

        `request_id`: the Resume's idempotency key, recorded by the same
        compare-and-set with where its stream starts (`resume_request_id`,
        `resume_sequence`), so a concurrent attempt of that Resume that lost
        finds the winner's resumption as soon as it lost.
        Raises ThreadBusy when the thread has another RUNNING run.
        """
        ...

    @abc.abstractmethod
    async def reserve_sequences(self, run_id: str, owner: str, upto: int) -> None:
        """Raise the run's reserved event numbers to at least `upto`; LeaseLost unless `owner` runs it."""
        ...

    @abc.abstractmethod
    async def claim_run(self, run_id: str, owner: str, lease_s: float) -> bool:
        """Take a RUNNING run whose lease expired (or that `owner` already holds); True if now owned."""
        ...

    @abc.abstractmethod
    async def claim_orphans(self, owner: str, lease_s: float, limit: int) -> list[str]:
        """Claim up to `limit` RUNNING runs whose lease expired; each is claimed by exactly one caller.

        Postgres: SELECT … FOR UPDATE SKIP LOCKED. SQLite: compare-and-set updates.
        """
        ...

    @abc.abstractmethod
    async def release(self, owner: str) -> int:
        """Expire the leases of `owner`'s RUNNING runs now (graceful shutdown hands them over)."""
        ...

    # --- history -------------------------------------------------------------
    @abc.abstractmethod
    async def latest_checkpoint(self, run_id: str) -> CheckpointRow | None:
        """The run's newest checkpoint, or None."""
        ...

    @abc.abstractmethod
    async def get_checkpoint(self, run_id: str, index: int) -> CheckpointRow | None:
        """One checkpoint, or None."""
        ...

    @abc.abstractmethod
    async def list_checkpoints(
        self, thread_id: str, run_id: str | None, after_position: int, limit: int, *, user_id: str
    ) -> list[CheckpointRow]:
        """A thread's checkpoints in write order with position > after_position (0 = from the start)."""
        ...

    @abc.abstractmethod
    async def events(self, run_id: str, after_sequence: int, limit: int = 1000) -> list[agent_pb2.RunEvent]:
        """Stored events with sequence > after_sequence, in order."""
        ...

    @abc.abstractmethod
    async def append_events(self, run_id: str, events: Sequence[agent_pb2.RunEvent]) -> None:
        """Store events outside a checkpoint (for example those of a run that failed before one)."""
        ...

    # --- long-term memories -------------------------------------------------
    # A user's memories belong to the user, not to a thread: every thread of
    # the user recalls them, and no other user ever sees them.
    @abc.abstractmethod
    async def add_memory(self, user_id: str, text: str) -> Memory:
        """Keep a fact for `user_id` (NUL, which Postgres text cannot hold, becomes U+FFFD)."""
        ...

    @abc.abstractmethod
    async def list_memories(
        self, user_id: str, limit: int | None = None, after: tuple[datetime, str] | None = None
    ) -> list[Memory]:
        """The user's facts, newest first (then by id); at most `limit` of them, those after `after`.

        `after` is the (created_at, memory_id) of the last fact of the previous page.
        """
        ...

    @abc.abstractmethod
    async def delete_memory(self, user_id: str, memory_id: str) -> bool:
        """Delete one of the user's facts; False when the user has no such fact (another's included)."""
        ...

    # --- secrets -------------------------------------------------------------
    @abc.abstractmethod
    async def secret(self, name: str) -> bytes:
        """A random value named `name`, created on first use and the same for every gateway on the store."""
        ...

    # --- retention and accounting -----------------------------------------
    @abc.abstractmethod
    async def prune(self, keep_last: int, idle_ttl_s: float | None) -> PruneStats:
        """Keep each run's newest `keep_last` checkpoints (never the newest one); drop idle threads.

        A thread idle longer than `idle_ttl_s` (by updated_at) whose runs are all
        over (none QUEUED, RUNNING or PAUSED) is deleted with everything under
        it: a run waiting for a human's approval may wait longer than any TTL.
        """
        ...

    @abc.abstractmethod
    async def storage(self, run_id: str) -> StorageStats:
        """What the run occupies, for benchmarks and the docs."""
        ...

    # --- the database itself ---------------------------------------------------
    @abc.abstractmethod
    async def ping(self) -> None:
        """One round trip to the database; raises when it does not answer (the gateway's health probe)."""
        ...

    @property
    @abc.abstractmethod
    def live_dsn(self) -> str | None:
        """Where gateways sharing this store tell each other things at once: a Postgres DSN (LISTEN/NOTIFY).

        None when the backend has no such channel: an SQLite file is served
        by one process, whose runs are followed in memory.
        """
        ...

    @abc.abstractmethod
    async def close(self) -> None:
        """Dispose of the engine."""
        ...
