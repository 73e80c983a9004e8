"""Service addresses become gRPC targets; the retry policy becomes one service config."""

from __future__ import annotations

import json

import grpc
import pytest

from agentloop.kernel.channels import CHANNEL_OPTIONS, merge_options, service_config
from agentloop.kernel.retry import RetryPolicy
from agentloop.kernel.setting_errors import SettingError
from agentloop.kernel.settings import GatewaySettings, grpc_target


@pytest.mark.parametrize(
    ("addr", "target"),
    [
        ("127.0.0.1:50051", "127.0.0.1:50051"),
        ("reasoner:50051", "reasoner:50051"),
        (
            "dns:///reasoner.agentloop.svc.cluster.local:50051",
            "dns:///reasoner.agentloop.svc.cluster.local:50051",
        ),
        ("127.0.0.1:5001,127.0.0.1:5002", "ipv4:127.0.0.1:5001,127.0.0.1:5002"),
        (" 10.0.0.1:5001 , 10.0.0.2:5001 ", "ipv4:10.0.0.1:5001,10.0.0.2:5001"),
        ("[::1]:5001,[::1]:5002", "ipv6:[::1]:5001,[::1]:5002"),
        ("ipv4:127.0.0.1:1,127.0.0.1:2", "ipv4:127.0.0.1:1,127.0.0.1:2"),
        ("unix:/run/agentloop/reasoner.sock", "unix:/run/agentloop/reasoner.sock"),
    ],
)
def test_addresses_become_grpc_targets(addr: str, target: str) -> None:
    assert grpc_target(addr) == target


@pytest.mark.parametrize(
    ("addr", "problem"),
    [
        ("", "empty address"),
        ("reasoner-0:50051,reasoner-1:50051", "is not an IP address; use dns:///reasoner-0:50051"),
        ("127.0.0.1:5001,127.0.0.1", "is not address:port"),
        ("127.0.0.1:5001,127.0.0.1:99999", "is not address:port"),
        ("127.0.0.1:5001,[::1]:5002", "mixes IPv4 and IPv6"),
        ("::1:5001,::1:5002", "[address]:port"),
    ],
)
def test_malformed_address_lists_are_refused(addr: str, problem: str) -> None:
    with pytest.raises(SettingError, match=r"^X") as info:
        grpc_target(addr, "X")
    assert problem in str(info.value)


def test_the_gateway_checks_its_dependency_addresses_at_startup() -> None:
    env = {"AGENTLOOP_REASONER_ADDR": "127.0.0.1:1,127.0.0.1:2", "AGENTLOOP_TOOLS_ADDR": "a:1,b:2"}
    with pytest.raises(SettingError, match=r"^AGENTLOOP_TOOLS_ADDR: list entry 'a:1'"):
        GatewaySettings.from_env(env)
    settings = GatewaySettings.from_env({**env, "AGENTLOOP_TOOLS_ADDR": "dns:///tools:50052"})
    assert settings.reasoner_addr == "127.0.0.1:1,127.0.0.1:2"
    assert settings.tools_addr == "dns:///tools:50052"


def test_service_config_balances_checks_health_waits_and_retries() -> None:
    config = json.loads(service_config(["agentloop.v1.Reasoner"], RetryPolicy(attempts=4, backoff_s=0.2)))
    assert config["loadBalancingConfig"] == [{"round_robin": {}}]
    assert config["healthCheckConfig"] == {"serviceName": ""}
    (method,) = config["methodConfig"]
    assert method["name"] == [{"service": "agentloop.v1.Reasoner"}]
    assert method["waitForReady"] is True
    assert method["retryPolicy"] == {
        "maxAttempts": 4,
        "initialBackoff": "0.200s",
        "maxBackoff": "5.000s",
        "backoffMultiplier": 2,
        "retryableStatusCodes": ["UNAVAILABLE"],
    }


def test_retry_policy_attempts_fit_grpc_limits() -> None:
    assert RetryPolicy(attempts=40).grpc_retry_policy() == RetryPolicy(attempts=5).grpc_retry_policy()
    assert RetryPolicy(attempts=1).grpc_retry_policy() is None
    method = json.loads(service_config(["s"], RetryPolicy(attempts=1)))["methodConfig"][0]
    assert "retryPolicy" not in method
    assert method["waitForReady"] is True


def test_the_rpc_backoff_stays_within_its_cap() -> None:
    policy = RetryPolicy(backoff_s=0.5, max_backoff_s=2.0)
    assert all(0 <= policy.delay_s(attempt) <= 2.0 for attempt in range(10) for _ in range(20))
    assert policy.should_retry(grpc.StatusCode.UNAVAILABLE, 0)
    assert not policy.should_retry(grpc.StatusCode.INTERNAL, 0)


def test_channel_options_bound_reconnect_backoff_and_override_by_key() -> None:
    options = dict(CHANNEL_OPTIONS)
    assert options["grpc.max_reconnect_backoff_ms"] <= 1_000
    assert options["grpc.initial_reconnect_backoff_ms"] <= options["grpc.max_reconnect_backoff_ms"]
    merged = merge_options(CHANNEL_OPTIONS, [("grpc.max_reconnect_backoff_ms", 5)])
    assert [value for key, value in merged if key == "grpc.max_reconnect_backoff_ms"] == [5]
