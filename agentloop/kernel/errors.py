"""The one exception hierarchy of agentloop and its mapping to gRPC status.

Services raise these typed errors wherever they detect a problem; a single
server interceptor (agentloop.kernel.serving.ErrorInterceptor) turns them into gRPC
status codes, so handlers never call `context.abort` themselves and every
service reports the same failure the same way.

Every error also carries machine-readable details, the `google.rpc.Status`
that gRPC sends in the `grpc-status-details-bin` trailer (see `rpc_status`):
an `ErrorInfo` (a stable reason, the agentloop domain and ids such as the
thread or run) on every error, a `BadRequest` naming the field for
INVALID_ARGUMENT, and a `RetryInfo` for RESOURCE_EXHAUSTED and UNAVAILABLE.
Clients branch on the reason and retry after the delay instead of parsing
the message text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.protobuf.message import DecodeError, Message
from google.rpc import error_details_pb2, status_pb2

# The ErrorInfo domain of every error agentloop raises.
ERROR_DOMAIN = "agentloop.dev"
# What RetryInfo suggests when the raiser does not know better.
DEFAULT_RETRY_DELAY_S = 1.0
# The codes whose errors tell the client when to try again.
_RETRYABLE = (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAVAILABLE)
_DETAILS_KEY = "grpc-status-details-bin"
NO_RETRY = ("grpc-retry-pushback-ms", "-1")
"""Trailing metadata that tells a gRPC client's retry policy not to retry the call (server pushback)."""


class Reason(StrEnum):
    """Every ErrorInfo reason of agentloop's own (the table "Error details" in docs/clients.md).

    An error raised without one carries its status code's name instead
    (INVALID_ARGUMENT, UNAVAILABLE, ...). A reason is a promise to clients, who
    branch on it: add one here and to the table together, never rename one.
    """

    THREAD_BUSY = "THREAD_BUSY"
    """ABORTED: the thread already has an active run and options.concurrency is REJECT."""
    THREAD_AWAITING_APPROVAL = "THREAD_AWAITING_APPROVAL"
    """ABORTED: the thread's last run waits for approval."""
    THREAD_NOT_FOUND = "THREAD_NOT_FOUND"
    """NOT_FOUND: no such thread of the caller."""
    RUN_NOT_FOUND = "RUN_NOT_FOUND"
    """NOT_FOUND: no such run of the caller."""
    CHECKPOINT_NOT_FOUND = "CHECKPOINT_NOT_FOUND"
    """NOT_FOUND: no such checkpoint in the thread."""
    MEMORY_NOT_FOUND = "MEMORY_NOT_FOUND"
    """NOT_FOUND: no such memory of the caller."""
    THREAD_EXISTS = "THREAD_EXISTS"
    """ALREADY_EXISTS: the thread id a fork should create is taken."""
    RUN_NOT_RESUMABLE = "RUN_NOT_RESUMABLE"
    """FAILED_PRECONDITION: the run has ended, or no longer waits for the decisions sent."""
    RUN_OWNED_ELSEWHERE = "RUN_OWNED_ELSEWHERE"
    """FAILED_PRECONDITION: another live gateway (or request) is continuing the run."""
    TOO_MANY_RUNS = "TOO_MANY_RUNS"
    """RESOURCE_EXHAUSTED: the gateway runs as many runs as it may."""
    TOO_MANY_RUNS_FOR_CALLER = "TOO_MANY_RUNS_FOR_CALLER"
    """RESOURCE_EXHAUSTED: the caller already runs its share of the gateway's runs."""
    TOO_MANY_CALLS = "TOO_MANY_CALLS"
    """RESOURCE_EXHAUSTED: the server serves as many calls at once as it may."""
    TOO_MANY_CALLS_FROM_PEER = "TOO_MANY_CALLS_FROM_PEER"
    """RESOURCE_EXHAUSTED: the caller's address has as many calls in flight as it may."""
    RUN_FAILED = "RUN_FAILED"
    """Any code: Invoke's run failed; the code is the failure's."""
    CONTEXT_LENGTH_EXCEEDED = "CONTEXT_LENGTH_EXCEEDED"
    """INVALID_ARGUMENT (Reasoner): the conversation does not fit the model's context window."""
    MODEL_ANSWER_MALFORMED = "MODEL_ANSWER_MALFORMED"
    """UNAVAILABLE (Reasoner): the model endpoint's answer cannot be read."""
    UNKNOWN_MODEL = "UNKNOWN_MODEL"
    """INVALID_ARGUMENT: the request names a model the Reasoner does not serve."""
    DATABASE_UNAVAILABLE = "DATABASE_UNAVAILABLE"
    """UNAVAILABLE: the gateway's database stayed unreachable for the store's retry budget."""


class AgentloopError(Exception):
    """Root of every error agentloop raises on purpose.

    `reason` (a `Reason`: clients branch on it) defaults to the status code's
    name; `metadata` names the resources involved (thread_id, run_id, ...);
    `retry_delay_s` overrides the RetryInfo delay.
    """

    code: grpc.StatusCode = grpc.StatusCode.INTERNAL

    def __init_subclass__(cls, code: grpc.StatusCode | None = None, **kwargs: Any) -> None:
        """A subclass names its status in its header: ``class NotFound(AgentloopError, code=...)``."""
        super().__init_subclass__(**kwargs)
        if code is not None:
            cls.code = code

    def __init__(
        self,
        message: str,
        *,
        reason: Reason | None = None,
        metadata: Mapping[str, str] | None = None,
        retry_delay_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason
        self.metadata = dict(metadata or {})
        self.retry_delay_s = retry_delay_s
        # Details relayed verbatim from another agentloop service (see from_rpc_error).
        self.relayed_details: list[any_pb2.Any] = []
        self.retried = False
        """The raiser already retried the work behind this error as often as it may: the caller's
        channel must not try again (the status goes out with gRPC's server pushback, `NO_RETRY`)."""


class InvalidArgument(AgentloopError, code=grpc.StatusCode.INVALID_ARGUMENT):
    """A request field is wrong; the message always starts with the field's path."""

    def __init__(self, field: str, problem: str, *, reason: Reason | None = None) -> None:
        super().__init__(f"{field}: {problem}", reason=reason)
        self.field = field
        self.problem = problem


class NotFound(AgentloopError, code=grpc.StatusCode.NOT_FOUND):
    """The named resource does not exist (or is not visible to the caller)."""


class Unavailable(AgentloopError, code=grpc.StatusCode.UNAVAILABLE):
    """A dependency (model endpoint, another service) cannot be reached; retrying may help."""


class ResourceExhausted(AgentloopError, code=grpc.StatusCode.RESOURCE_EXHAUSTED):
    """A quota or rate limit was hit (for example the model endpoint's 429)."""


class DeadlineExceeded(AgentloopError, code=grpc.StatusCode.DEADLINE_EXCEEDED):
    """The work did not finish within the caller's deadline or a configured timeout."""


class FailedPrecondition(AgentloopError, code=grpc.StatusCode.FAILED_PRECONDITION):
    """The request is valid but the system is not in a state to serve it."""


class AlreadyExists(AgentloopError, code=grpc.StatusCode.ALREADY_EXISTS):
    """What the request would create exists already (for example a thread id that is taken)."""


class Aborted(AgentloopError, code=grpc.StatusCode.ABORTED):
    """The request conflicts with current state, for example a thread that already has an active run."""


class PermissionDenied(AgentloopError, code=grpc.StatusCode.PERMISSION_DENIED):
    """The caller is authenticated but the endpoint refused it (for example a bad API key)."""


def from_rpc_error(exc: grpc.aio.AioRpcError, service: str) -> AgentloopError:
    """A typed error carrying the status (and the details) of a failed call to another agentloop service."""
    err = AgentloopError(f"{service}: {exc.details() or exc.code().name}", metadata={"service": service})
    err.code = exc.code()
    err.relayed_details = list(status_from_metadata(exc.trailing_metadata() or ()).details)
    return err


def reason_of(err: AgentloopError) -> str:
    """The ErrorInfo reason of an error: its own, or the one of the service it was relayed from."""
    if err.reason:
        return str(err.reason)
    for detail in err.relayed_details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            return str(info.reason)
    return ""


def status_from_metadata(metadata: Sequence[tuple[str, str | bytes]]) -> status_pb2.Status:
    """The google.rpc.Status a call's trailing metadata carries; an empty one when it carries none."""
    status = status_pb2.Status()
    for key, value in metadata:
        if key == _DETAILS_KEY and isinstance(value, bytes):
            try:
                status.ParseFromString(value)
            except DecodeError:
                return status_pb2.Status()
    return status


def status_details(err: AgentloopError) -> list[Message]:
    """ErrorInfo for every error, plus BadRequest for a bad field and RetryInfo when retrying helps."""
    info = error_details_pb2.ErrorInfo(
        reason=err.reason or err.code.name, domain=ERROR_DOMAIN, metadata=err.metadata
    )
    details: list[Message] = [info]
    if isinstance(err, InvalidArgument):
        violation = error_details_pb2.BadRequest.FieldViolation(field=err.field, description=err.problem)
        details.append(error_details_pb2.BadRequest(field_violations=[violation]))
    if err.code in _RETRYABLE:
        delay = duration_pb2.Duration()
        delay.FromNanoseconds(round((err.retry_delay_s or DEFAULT_RETRY_DELAY_S) * 1e9))
        details.append(error_details_pb2.RetryInfo(retry_delay=delay))
    return details


def rpc_status(err: AgentloopError) -> status_pb2.Status:
    """The google.rpc.Status sent for `err`: its code, its message and its details."""
    status = status_pb2.Status(code=err.code.value[0], message=err.message)
    if err.relayed_details:
        status.details.extend(err.relayed_details)
        return status
    for detail in status_details(err):
        status.details.add().Pack(detail)
    return status
