"""Wrapping gRPC method handlers: the one piece every server interceptor of agentloop needs.

An interceptor that must run code around the servicer (map errors, check a
token, open a span) wraps the handler's behaviour. The unary and the
server-streaming cases need different wrappers, but rebuilding the handler
with the original (de)serializers is the same for all of them: it lives here.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

UnaryBehavior = Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]
StreamBehavior = Callable[[Any, grpc.aio.ServicerContext], AsyncIterator[Any]]


def wrap_handler(
    handler: grpc.RpcMethodHandler,
    unary: Callable[[UnaryBehavior], UnaryBehavior],
    stream: Callable[[StreamBehavior], StreamBehavior],
) -> grpc.RpcMethodHandler:
    """The handler with its behaviour wrapped by `unary` or `stream`; other kinds are returned unchanged."""
    if handler.unary_unary is not None:
        return grpc.unary_unary_rpc_method_handler(
            unary(handler.unary_unary),
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
    if handler.unary_stream is not None:
        # A streaming handler written as a coroutine that calls `context.write` (grpc.health.v1's
        # Watch, which client-side health checking opens) is awaited like a unary one, not iterated.
        behavior = handler.unary_stream
        wrapped = stream(behavior) if inspect.isasyncgenfunction(behavior) else unary(behavior)
        return grpc.unary_stream_rpc_method_handler(
            wrapped,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
    return handler
