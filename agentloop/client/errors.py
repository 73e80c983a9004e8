"""Errors the client raises: one class, with the gRPC status code name and the server's message."""

from __future__ import annotations

import grpc


class ClientError(Exception):
    """A call failed. ``code`` is the gRPC status code name (NOT_FOUND, INVALID_ARGUMENT, ...).

    The gateway's message names the bad field first (``thread_id: ...``), so ``str(error)``
    is what a person needs to see.
    """

    def __init__(self, code: str, details: str) -> None:
        super().__init__(f"{code}: {details}")
        self.code = code
        self.details = details

    @classmethod
    def from_rpc(cls, exc: grpc.aio.AioRpcError) -> ClientError:
        return cls(exc.code().name, exc.details() or "")


RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN})
"""Breaks worth retrying after (reattach, or the same request id again): the gateway went away
or the connection reset."""
