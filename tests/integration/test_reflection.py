"""Reflection answers as v1 (newer grpcurl and Postman try it first) and as v1alpha, on every service."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest
from google.protobuf import descriptor_pb2
from grpc_reflection.v1alpha import reflection_pb2

from tests.support.stack import Stack, start_stack

pytestmark = pytest.mark.integration


@pytest.fixture
async def stack() -> AsyncIterator[Stack]:
    stack = await start_stack()
    try:
        yield stack
    finally:
        await stack.close()


async def ask(
    port: int, version: str, request: reflection_pb2.ServerReflectionRequest
) -> reflection_pb2.ServerReflectionResponse:
    """One raw exchange on /grpc.reflection.<version>.ServerReflection (v1 and v1alpha are wire-identical)."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        method = channel.stream_stream(
            f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo",
            request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
            response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
        )
        responses = [r async for r in method(iter([request]), timeout=10)]
    assert len(responses) == 1
    return responses[0]


@pytest.mark.parametrize("version", ["v1", "v1alpha"])
async def test_every_service_lists_itself_under_both_versions(stack: Stack, version: str) -> None:
    expected = {
        stack.gateway.port: "agentloop.v1.Agent",
        stack.reasoner.port: "agentloop.v1.Reasoner",
        stack.tools.port: "agentloop.v1.ToolService",
    }
    for port, service in expected.items():
        reply = await ask(port, version, reflection_pb2.ServerReflectionRequest(list_services=""))
        names = {s.name for s in reply.list_services_response.service}
        assert {service, "grpc.health.v1.Health"} <= names
        assert {"grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"} <= names


async def test_v1_describes_the_api_and_itself(stack: Stack) -> None:
    for symbol, file_name in (
        ("agentloop.v1.Agent", "agentloop/v1/agent.proto"),
        ("grpc.reflection.v1.ServerReflection", "grpc/reflection/v1/reflection.proto"),
    ):
        request = reflection_pb2.ServerReflectionRequest(file_containing_symbol=symbol)
        reply = await ask(stack.gateway.port, "v1", request)
        files = [
            descriptor_pb2.FileDescriptorProto.FromString(raw)
            for raw in reply.file_descriptor_response.file_descriptor_proto
        ]
        assert file_name in {f.name for f in files}, reply
