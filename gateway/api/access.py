"""Who may call what: one check, applied to every RPC of the Agent service before its handler runs.

`access_checked` wraps each RPC the service descriptor lists, so no handler can forget it and an
RPC added to the contract is covered the moment it is implemented:

- the caller is resolved once: `request.user_id` becomes the bearer token's user when
  authentication is on (PERMISSION_DENIED for a request naming another user), the request's
  own otherwise (agentloop.kernel.security.effective_user); handlers read `request.user_id`
  and nothing else;
- every id field of the request is at most MAX_ID_CHARS characters and free of NUL and control
  characters: ids become database keys (Postgres text cannot hold NUL; thread keys join the
  user and the client's id with a control character, gateway.store.scope).

Which runs and threads the caller owns is the store's one rule (gateway.store.ownership): a row
of another user is NOT_FOUND, like one that does not exist.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import grpc
from google.protobuf.descriptor import ServiceDescriptor

from agentloop.kernel.errors import InvalidArgument
from agentloop.kernel.security import effective_user

T = TypeVar("T")

MAX_ID_CHARS = 256
ID_FIELDS = ("thread_id", "user_id", "run_id", "memory_id", "checkpoint_id", "request_id", "new_thread_id")


def check_ids(request: object) -> None:
    """Every id field of a request is at most 256 characters and free of NUL and control characters.

    Ids become database keys: Postgres text cannot hold NUL, and both backends
    must agree on what an id may be.
    """
    for name in ID_FIELDS:
        value = getattr(request, name, None)
        if not isinstance(value, str) or not value:
            continue
        if len(value) > MAX_ID_CHARS:
            raise InvalidArgument(name, f"is longer than {MAX_ID_CHARS} characters")
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
            raise InvalidArgument(name, "must not contain control characters")


def resolve_caller(request: Any) -> None:
    """The request acts as its caller, and every id it names is one the store can key on."""
    request.user_id = effective_user(request.user_id)
    check_ids(request)


def access_checked(service: ServiceDescriptor) -> Callable[[type[T]], type[T]]:
    """Class decorator: every RPC of `service` runs `resolve_caller` on its request first.

    Each request of the service must carry `user_id` (a TypeError at import otherwise).
    """

    def decorate(cls: type[T]) -> type[T]:
        for method in service.methods:
            behavior = getattr(cls, method.name)
            if "user_id" not in method.input_type.fields_by_name:
                raise TypeError(f"{service.full_name}.{method.name}: its request has no user_id")
            setattr(cls, method.name, _checked(behavior))
        return cls

    return decorate


def _checked(behavior: Callable[..., Any]) -> Callable[..., Any]:
    if inspect.isasyncgenfunction(behavior):

        async def stream(self: Any, request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            resolve_caller(request)
            async for item in behavior(self, request, context):
                yield item

        return functools.wraps(behavior)(stream)

    async def unary(self: Any, request: Any, context: grpc.aio.ServicerContext) -> Any:
        resolve_caller(request)
        return await behavior(self, request, context)

    return functools.wraps(behavior)(unary)
