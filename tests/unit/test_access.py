"""The Agent service's one access check runs before every handler: caller resolved, ids bounded."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from agentloop.kernel.errors import InvalidArgument, PermissionDenied
from agentloop.kernel.security import _AUTH_USER
from agentloop.v1 import agent_pb2, reasoner_pb2
from gateway.api.access import ID_FIELDS, MAX_ID_CHARS, access_checked
from gateway.api.service import AgentService

AGENT = agent_pb2.DESCRIPTOR.services_by_name["Agent"]
METHODS = list(AGENT.methods)


class Untouchable:
    """A manager no handler may reach: the check must refuse the request first."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the handler ran and used the manager's {name}")


async def call(method: str, request: Any) -> None:
    handler = getattr(AgentService(Untouchable()), method)  # type: ignore[arg-type]
    result = handler(request, None)
    if inspect.isasyncgen(result):
        async for _ in result:
            pass
    else:
        await result


def request_of(method: Any, **fields: str) -> Any:
    return getattr(agent_pb2, method.input_type.name)(**fields)


@pytest.mark.parametrize("method", METHODS, ids=lambda m: m.name)
async def test_every_rpc_refuses_an_id_with_a_control_character(method: Any) -> None:
    with pytest.raises(InvalidArgument) as info:
        await call(method.name, request_of(method, user_id="ana\x00"))
    assert info.value.field == "user_id"


@pytest.mark.parametrize("method", METHODS, ids=lambda m: m.name)
async def test_every_rpc_refuses_an_id_too_long(method: Any) -> None:
    names = [f for f in ID_FIELDS if f in method.input_type.fields_by_name and f != "user_id"]
    for name in names:
        with pytest.raises(InvalidArgument) as info:
            await call(method.name, request_of(method, user_id="ana", **{name: "x" * (MAX_ID_CHARS + 1)}))
        assert info.value.field == name


@pytest.mark.parametrize("method", METHODS, ids=lambda m: m.name)
async def test_every_rpc_acts_as_the_token_user(method: Any) -> None:
    token = _AUTH_USER.set("ana")
    try:
        with pytest.raises(PermissionDenied):
            await call(method.name, request_of(method, user_id="bob"))
    finally:
        _AUTH_USER.reset(token)


def test_a_service_whose_request_names_no_caller_is_refused() -> None:
    with pytest.raises(TypeError, match="has no user_id"):
        access_checked(reasoner_pb2.DESCRIPTOR.services_by_name["Reasoner"])(
            type("Servicer", (), {"Step": None})
        )
