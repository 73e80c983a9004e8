"""Wrapping gRPC method handlers: the one piece every server interceptor of agentloop needs.

An interceptor that must run code around the servicer (map errors, check a
token, open a span) wraps the handler's behaviour. The unary and the
server-streaming cases need different wrappers, but rebuilding the handler
with the original (de)serializers is the same for all of them: it lives here.
"""

from __future__ import annotations

import abc
import contextlib
import functools
import inspect
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable
from typing import Any

import grpc
from google.protobuf.message import DecodeError, Message

from agentloop.kernel.errors import InvalidArgument
from agentloop.kernel.request_checks import check_request, undecodable

UnaryBehavior = Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]
StreamBehavior = Callable[[Any, grpc.aio.ServicerContext], AsyncIterator[Any]]


def wrap_handler(
    handler: grpc.RpcMethodHandler,
    unary: Callable[[UnaryBehavior], UnaryBehavior],
    stream: Callable[[StreamBehavior], StreamBehavior | UnaryBehavior],
) -> grpc.RpcMethodHandler:
    """The handler with its behaviour wrapped by `unary` or `stream`; other kinds are returned unchanged.

    `stream` may turn a streaming behaviour into a coroutine that writes its
    items with `context.write`; grpc serves either form.

    The first wrap of a handler (the innermost interceptor) also makes its
    requests checked (`agentloop.kernel.request_checks`): a request that does not
    decode, or holds an unknown enum value or an invalid Duration, reaches the
    servicer as an InvalidArgument raised where every interceptor sees it,
    instead of grpc ending the call UNKNOWN before any of them runs.
    """
    deserializer = handler.request_deserializer
    checked = _CheckedRequests.of(deserializer)
    if handler.unary_unary is not None:
        behavior = handler.unary_unary
        return grpc.unary_unary_rpc_method_handler(
            unary(_guarded(behavior) if checked is not deserializer else behavior),
            request_deserializer=checked,
            response_serializer=handler.response_serializer,
        )
    if handler.unary_stream is not None:
        # A streaming handler written as a coroutine that calls `context.write` (grpc.health.v1's
        # Watch, which client-side health checking opens) is awaited like a unary one, not iterated.
        behavior = handler.unary_stream
        wrap = stream if inspect.isasyncgenfunction(behavior) else unary
        return grpc.unary_stream_rpc_method_handler(
            wrap(_guarded(behavior) if checked is not deserializer else behavior),
            request_deserializer=checked,
            response_serializer=handler.response_serializer,
        )
    return handler


class _Rejected:
    """What a checked deserializer hands on for a bad request: the error its handler call raises."""

    __slots__ = ("error",)

    def __init__(self, error: InvalidArgument) -> None:
        self.error = error


class _CheckedRequests:
    """A request deserializer that decodes and checks; a bad request becomes `_Rejected`, never an exception.

    grpc ends a call whose deserializer raises with UNKNOWN before any
    interceptor runs; handing the error on lets the servicer's own wrapper
    raise it (INVALID_ARGUMENT, the field named, traced like any refusal).
    """

    def __init__(self, message_type: type[Message]) -> None:
        self._type = message_type

    @classmethod
    def of(cls, deserializer: Any) -> Any:
        """The checked form of a message type's `FromString` (anything else is returned as it is)."""
        owner = getattr(deserializer, "__self__", None)
        if isinstance(deserializer, cls) or not (isinstance(owner, type) and issubclass(owner, Message)):
            return deserializer
        return cls(owner)

    def __call__(self, data: bytes) -> Any:
        try:
            request = self._type.FromString(data)
        except DecodeError:
            return _Rejected(undecodable(self._type, data))
        problem = check_request(request)
        return request if problem is None else _Rejected(problem)


def _guarded(behavior: Callable[[Any, grpc.aio.ServicerContext], Any]) -> Any:
    """`behavior`, raising a rejected request's error when called (a plain function: no frame per item)."""

    def guarded(request: Any, context: grpc.aio.ServicerContext) -> Any:
        if isinstance(request, _Rejected):
            raise request.error
        return behavior(request, context)

    return guarded


Continuation = Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]]
"""What a server interceptor calls to find the handler of a call (None for an unknown method)."""

Around = Callable[[grpc.aio.ServicerContext], contextlib.AbstractAsyncContextManager[object]]
"""What surrounds each call of a handler (a span, the caller's identity), given the call's context."""


def wrap_around(handler: grpc.RpcMethodHandler, around: Around) -> grpc.RpcMethodHandler:
    """The handler with every call run inside ``around(context)``, unary and streaming alike.

    A streaming call stays inside until its last item is sent (or the client
    goes away), so what `around` records covers the whole stream. It is served
    by a coroutine that writes each item (`context.write`) rather than by an
    async generator: a generator that grpc stops iterating (the client hung up
    while an item was being sent) is closed later by the event loop's
    finalizer, in another task and another `contextvars.Context`, where
    `around` could neither reset what it set nor tell a hang-up from a crash.
    The coroutine ends in the call's own task whatever happens, and closes the
    inner stream there too.
    """

    def unary(behavior: UnaryBehavior) -> UnaryBehavior:
        async def wrapper(request: Any, context: grpc.aio.ServicerContext) -> Any:
            async with around(context):
                return await behavior(request, context)

        return wrapper

    def stream(behavior: StreamBehavior) -> UnaryBehavior:
        async def wrapper(request: Any, context: grpc.aio.ServicerContext) -> None:
            async with around(context):
                items = behavior(request, context)
                try:
                    async for item in items:
                        await context.write(item)
                finally:
                    if isinstance(items, AsyncGenerator):
                        await items.aclose()

        return wrapper

    return wrap_handler(handler, unary, stream)


class AroundInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """A server interceptor that runs each call it applies to inside a context of its own.

    Subclasses say which calls (`applies`) and what surrounds them (`around`);
    finding and rebuilding the handler is the same for all of them.
    """

    def applies(self, method: str) -> bool:
        """Whether calls of `method` ("/agentloop.v1.Agent/Run") are wrapped."""
        return True

    @abc.abstractmethod
    def around(
        self, details: grpc.HandlerCallDetails, context: grpc.aio.ServicerContext
    ) -> contextlib.AbstractAsyncContextManager[object]:
        """What surrounds one call: entered before the handler runs, exited after it ends."""

    async def intercept_service(
        self,
        continuation: Continuation,
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None or not self.applies(handler_call_details.method or ""):
            return handler
        return wrap_around(handler, functools.partial(self.around, handler_call_details))


CallEdit = Callable[[grpc.aio.ClientCallDetails], grpc.aio.ClientCallDetails]
"""Changes an outgoing call's details (its metadata) before it is sent."""


class _CallEditor:
    def __init__(self, edit: CallEdit) -> None:
        self._edit = edit

    async def _intercept(
        self,
        continuation: Callable[[grpc.aio.ClientCallDetails, Any], Awaitable[Any]],
        client_call_details: grpc.aio.ClientCallDetails,
        request: Any,
    ) -> Any:
        return await continuation(self._edit(client_call_details), request)


class _UnaryUnaryEditor(_CallEditor, grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    intercept_unary_unary = _CallEditor._intercept


class _UnaryStreamEditor(_CallEditor, grpc.aio.UnaryStreamClientInterceptor):  # type: ignore[misc]
    intercept_unary_stream = _CallEditor._intercept


def call_editors(edit: CallEdit) -> list[Any]:
    """Client interceptors that pass every outgoing call's details through `edit`.

    Unary-unary and unary-stream, the two kinds the services' RPCs use (a
    channel files each interceptor under one kind only, hence two).
    """
    return [_UnaryUnaryEditor(edit), _UnaryStreamEditor(edit)]


def with_metadata(
    details: grpc.aio.ClientCallDetails, pairs: Iterable[tuple[str, str]]
) -> grpc.aio.ClientCallDetails:
    """The call's details with `pairs` added to its metadata."""
    outgoing = grpc.aio.Metadata(*(details.metadata or ()))
    for key, value in pairs:
        outgoing.add(key, value)
    return details._replace(metadata=outgoing)
