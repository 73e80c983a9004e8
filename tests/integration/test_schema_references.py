"""Schema references through the real services: nothing a schema names outside itself is fetched or read.

A run's output_schema comes from any authenticated client; the bait (a local
file and a loopback HTTP server, both holding a secret) shows that a `$ref` to
either is refused with INVALID_ARGUMENT naming the field, that the server is
never asked, and that the secret appears nowhere in the answer.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from agentloop.kernel.wellknown import dict_to_struct, struct_to_dict
from agentloop.scripted_model import Scenario, Script, ScriptedToolCall, Turn
from agentloop.v1 import agent_pb2
from tests.support.bait import SECRET, BaitServer, bait_file, bait_server
from tests.support.stack import Stack, final_of, running_stack

pytestmark = pytest.mark.integration

SCRIPT = Script(
    scenarios=(
        Scenario(
            match="^answer$",
            turns=(
                Turn(tool_calls=(ScriptedToolCall("final_answer", {"name": "x", "size": 3}),)),
                Turn(content="Done: {{last_tool}}"),
            ),
        ),
    )
)


@pytest.fixture
async def stack() -> AsyncIterator[Stack]:
    async with running_stack(SCRIPT) as stack:
        yield stack


@pytest.fixture
def bait() -> Iterator[BaitServer]:
    with bait_server() as server:
        yield server


def schema_with(ref: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"name": {"$ref": ref}, "size": {"type": "integer"}},
        "required": ["name"],
        **extra,
    }


async def refused(stack: Stack, schema: dict[str, Any]) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.run("answer", output_schema=dict_to_struct(schema))
    return info.value


async def test_a_ref_to_a_local_file_is_refused_and_the_file_is_never_read(
    stack: Stack, tmp_path: Path
) -> None:
    path = bait_file(tmp_path)
    for ref, extra in (
        (path.as_uri(), {}),
        (path.name, {"$id": tmp_path.as_uri() + "/"}),  # relative to an $id that names the directory
    ):
        error = await refused(stack, schema_with(ref, **extra))
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        details = error.details() or ""
        assert details.startswith(f"options.output_schema: refers outside itself: $ref {ref!r}"), details
        assert SECRET not in details
        assert SECRET not in str(error.trailing_metadata())
    # Nothing ran: the model was never asked.
    assert stack.model.requests == []


async def test_a_ref_to_a_loopback_http_server_is_refused_without_a_request(
    stack: Stack, bait: BaitServer
) -> None:
    for schema in (
        schema_with(bait.url),
        schema_with("#/$defs/Name", **{"$defs": {"Name": {"allOf": [{"$ref": bait.url}]}}}),
        {"$dynamicRef": bait.url},
    ):
        error = await refused(stack, schema)
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        details = error.details() or ""
        assert details.startswith("options.output_schema: refers outside itself"), details
        assert SECRET not in details
    assert bait.requests == []
    assert stack.model.requests == []


async def test_local_references_and_a_root_id_work_and_fetch_nothing(stack: Stack, bait: BaitServer) -> None:
    schema = schema_with("#/$defs/Name", **{"$id": bait.url, "$defs": {"Name": {"type": "string"}}})
    events = await stack.run("answer", output_schema=dict_to_struct(schema))

    final = final_of(events)
    assert final.metadata.stop_reason == agent_pb2.STOP_REASON_COMPLETED
    assert struct_to_dict(final.structured_output) == {"name": "x", "size": 3}
    assert bait.requests == []
    assert SECRET not in json.dumps([str(e) for e in events])
