"""The one exception hierarchy of agentloop and its mapping to gRPC status.

Services raise these typed errors wherever they detect a problem; a single
server interceptor (agentloop.serving.ErrorInterceptor) turns them into gRPC
status codes, so handlers never call `context.abort` themselves and every
service reports the same failure the same way.
"""

from __future__ import annotations

import grpc


class AgentloopError(Exception):
    """Root of every error agentloop raises on purpose."""

    code: grpc.StatusCode = grpc.StatusCode.INTERNAL

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidArgument(AgentloopError):
    """A request field is wrong; the message always starts with the field's path."""

    code = grpc.StatusCode.INVALID_ARGUMENT

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field


class NotFound(AgentloopError):
    """The named resource does not exist (or is not visible to the caller)."""

    code = grpc.StatusCode.NOT_FOUND


class Unavailable(AgentloopError):
    """A dependency (model endpoint, another service) cannot be reached; retrying may help."""

    code = grpc.StatusCode.UNAVAILABLE


class ResourceExhausted(AgentloopError):
    """A quota or rate limit was hit (for example the model endpoint's 429)."""

    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class DeadlineExceeded(AgentloopError):
    """The work did not finish within the caller's deadline or a configured timeout."""

    code = grpc.StatusCode.DEADLINE_EXCEEDED


class FailedPrecondition(AgentloopError):
    """The request is valid but the system is not in a state to serve it."""

    code = grpc.StatusCode.FAILED_PRECONDITION


class Aborted(AgentloopError):
    """The request conflicts with current state, for example a thread that already has an active run."""

    code = grpc.StatusCode.ABORTED


class PermissionDenied(AgentloopError):
    """The caller is authenticated but the endpoint refused it (for example a bad API key)."""

    code = grpc.StatusCode.PERMISSION_DENIED


def from_rpc_error(exc: grpc.aio.AioRpcError, service: str) -> AgentloopError:
    """A typed error carrying the status of a failed call to another agentloop service."""
    err = AgentloopError(f"{service}: {exc.details() or exc.code().name}")
    err.code = exc.code()
    return err
