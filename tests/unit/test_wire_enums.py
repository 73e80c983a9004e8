"""Every stop reason and decision kind the gateway uses has its value in the contract's enums."""

from __future__ import annotations

import re
from pathlib import Path

import grpc
import pytest

from agentloop.v1 import agent_pb2
from gateway.journal import state
from gateway.journal.convert import code_value, decision_kind_value, status_code, stop_reason_value

GATEWAY = Path(state.__file__).parents[1]
# decision("kind", ...) and f"{what}_failed" with the names the compression module passes.
LITERAL = re.compile(r'decision\(\s*"([a-z_]+)"')
FAILED_CALLS = re.compile(r'_one_call\([^)]*"([a-z_]+)"\)')


def emitted_kinds() -> set[str]:
    kinds: set[str] = set()
    for source in GATEWAY.rglob("*.py"):
        text = source.read_text()
        kinds.update(LITERAL.findall(text))
        kinds.update(f"{what}_failed" for what in FAILED_CALLS.findall(text))
    return kinds


def test_every_decision_kind_the_gateway_emits_is_in_the_enum() -> None:
    kinds = emitted_kinds()
    assert {"loop_detected", "resumed", "context_compressed", "session_memory_failed"} <= kinds
    for kind in kinds:
        assert decision_kind_value(kind) != agent_pb2.DECISION_KIND_UNSPECIFIED, kind


@pytest.mark.parametrize("reason", list(state.StopReason))
def test_every_stop_reason_is_in_the_enum(reason: state.StopReason) -> None:
    assert stop_reason_value(reason) != agent_pb2.STOP_REASON_UNSPECIFIED
    assert stop_reason_value(reason.value) == stop_reason_value(reason)
    assert stop_reason_value(None) == stop_reason_value("") == agent_pb2.STOP_REASON_UNSPECIFIED


@pytest.mark.parametrize("code", list(grpc.StatusCode))
def test_status_codes_round_trip_through_google_rpc_code(code: grpc.StatusCode) -> None:
    assert status_code(code_value(code.name)) == code
