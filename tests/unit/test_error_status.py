"""The google.rpc.Status every typed error maps to: which details each status code gets."""

from __future__ import annotations

import grpc
from google.rpc import error_details_pb2, status_pb2
from grpc.aio import Metadata

from agentloop.kernel.errors import (
    ERROR_DOMAIN,
    AgentloopError,
    FailedPrecondition,
    InvalidArgument,
    Reason,
    Unavailable,
    from_rpc_error,
    rpc_status,
)


def kinds(status: status_pb2.Status) -> list[str]:
    return [d.TypeName() for d in status.details]


def test_every_error_has_error_info_with_a_default_reason() -> None:
    status = rpc_status(AgentloopError("internal error: KeyError"))
    assert status.code == grpc.StatusCode.INTERNAL.value[0]
    assert kinds(status) == ["google.rpc.ErrorInfo"]
    info = error_details_pb2.ErrorInfo()
    status.details[0].Unpack(info)
    assert (info.reason, info.domain) == ("INTERNAL", ERROR_DOMAIN)


def test_invalid_argument_names_the_field() -> None:
    status = rpc_status(InvalidArgument("options.max_steps", "must be between 1 and 100"))
    assert status.message == "options.max_steps: must be between 1 and 100"
    assert kinds(status) == ["google.rpc.ErrorInfo", "google.rpc.BadRequest"]
    bad = error_details_pb2.BadRequest()
    status.details[1].Unpack(bad)
    assert bad.field_violations[0].field == "options.max_steps"
    assert bad.field_violations[0].description == "must be between 1 and 100"


def test_unavailable_says_when_to_retry() -> None:
    status = rpc_status(Unavailable("reasoner down", retry_delay_s=2.5))
    retry = error_details_pb2.RetryInfo()
    assert kinds(status) == ["google.rpc.ErrorInfo", "google.rpc.RetryInfo"]
    status.details[1].Unpack(retry)
    assert retry.retry_delay.ToMilliseconds() == 2500


def test_a_precondition_carries_its_reason_and_ids() -> None:
    ended = FailedPrecondition("ended", reason=Reason.RUN_NOT_RESUMABLE, metadata={"run_id": "r1"})
    status = rpc_status(ended)
    info = error_details_pb2.ErrorInfo()
    status.details[0].Unpack(info)
    assert info.reason == "RUN_NOT_RESUMABLE"
    assert dict(info.metadata) == {"run_id": "r1"}
    assert kinds(status) == ["google.rpc.ErrorInfo"]


def test_an_error_relayed_from_another_service_keeps_its_details() -> None:
    downstream = rpc_status(InvalidArgument("params.messages[0].role", "must be set"))
    exc = grpc.aio.AioRpcError(
        grpc.StatusCode.INVALID_ARGUMENT,
        Metadata(),
        Metadata(("grpc-status-details-bin", downstream.SerializeToString())),
        details=downstream.message,
    )
    relayed = rpc_status(from_rpc_error(exc, "reasoner"))
    assert relayed.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert relayed.message == "reasoner: params.messages[0].role: must be set"
    assert list(relayed.details) == list(downstream.details)


def test_an_error_relayed_without_details_gets_its_own() -> None:
    exc = grpc.aio.AioRpcError(grpc.StatusCode.UNAVAILABLE, Metadata(), Metadata(), details="connect failed")
    relayed = rpc_status(from_rpc_error(exc, "tools"))
    assert kinds(relayed) == ["google.rpc.ErrorInfo", "google.rpc.RetryInfo"]
    info = error_details_pb2.ErrorInfo()
    relayed.details[0].Unpack(info)
    assert (info.reason, dict(info.metadata)) == ("UNAVAILABLE", {"service": "tools"})
