"""Server limits: the settings, the gRPC options they become, client addresses, run shares."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agentloop.kernel.call_limits import CallLimits, peer_host
from agentloop.kernel.channels import connection_cap, limit_options
from agentloop.kernel.errors import ResourceExhausted
from agentloop.kernel.setting_errors import SettingError
from agentloop.kernel.settings import GATEWAY_LIMITS, GatewaySettings, ServerLimits
from gateway.runs.shares import RunShares


@pytest.mark.parametrize(
    ("peer", "host"),
    [
        ("ipv4:10.0.0.5:51234", "10.0.0.5"),
        ("ipv6:%5B::1%5D:50228", "::1"),
        ("ipv6:[2001:db8::7]:443", "2001:db8::7"),
        ("ipv6:%5B::ffff:127.0.0.1%5D:50228", "127.0.0.1"),
        ("unix:/run/agentloop.sock", "unix"),
        ("unix:", "unix"),
    ],
)
def test_a_peer_is_its_address_without_the_port(peer: str, host: str) -> None:
    assert peer_host(peer) == host


def test_limits_become_the_grpc_arguments_core_reads() -> None:
    options = dict(limit_options(GATEWAY_LIMITS, open_file_limit=1_000_000))
    assert options == {
        "grpc.server_handshake_timeout_ms": 10_000,
        "grpc.max_allowed_incoming_connections": 10_000,
        "grpc.max_connection_idle_ms": 60_000,
        "grpc.max_connection_age_ms": 3_600_000,
        "grpc.max_connection_age_grace_ms": 3_600_000,
        "grpc.max_concurrent_streams": 1000,
    }


def test_zero_leaves_grpc_its_default() -> None:
    off = ServerLimits(
        max_connections=0, connection_idle_s=0, connection_age_s=0, max_streams_per_connection=0
    )
    assert dict(limit_options(off, 1024)) == {"grpc.server_handshake_timeout_ms": 10_000}


@pytest.mark.parametrize(
    ("setting", "files", "cap"), [(10_000, 20_000, 10_000), (10_000, 1024, 512), (100, None, 100), (0, 64, 0)]
)
def test_connections_never_take_more_than_half_the_descriptors(
    setting: int, files: int | None, cap: int
) -> None:
    assert connection_cap(setting, files) == cap


def test_the_gateway_reads_its_limits_and_the_others_keep_theirs() -> None:
    env = {"AGENTLOOP_MAX_CALLS_PER_PEER": "7", "AGENTLOOP_CONNECTION_IDLE_S": "0"}
    gateway = GatewaySettings.from_env(env).limits
    assert (gateway.max_calls_per_peer, gateway.connection_idle_s) == (7, 0.0)
    assert gateway.max_streams_per_connection == GATEWAY_LIMITS.max_streams_per_connection
    assert GatewaySettings.from_env({}).limits == GATEWAY_LIMITS
    assert ServerLimits.from_env({}).max_calls_per_peer == 0  # reasoner, tools: their caller is a gateway
    with pytest.raises(SettingError, match="AGENTLOOP_MAX_CALLS="):
        ServerLimits.from_env({"AGENTLOOP_MAX_CALLS": "many"})


@pytest.mark.parametrize(
    ("runs", "per_caller", "share"), [(1000, 0, 500), (5, 0, 3), (1, 0, 1), (4, 9, 4), (8, 2, 2)]
)
def test_a_caller_share_is_half_the_runs_unless_set(runs: int, per_caller: int, share: int) -> None:
    settings = GatewaySettings(max_active_runs=runs, max_active_runs_per_caller=per_caller)
    assert settings.run_share == share


def test_shares_refuse_a_caller_at_its_share_and_free_slots_as_runs_end() -> None:
    shares = RunShares(2)
    shares.take("user:ana")
    shares.take("user:ana")
    with pytest.raises(ResourceExhausted) as refused:
        shares.take("user:ana")
    assert refused.value.reason == "TOO_MANY_RUNS_FOR_CALLER"
    shares.take("user:bob")
    shares.give_back("user:ana")
    shares.take("user:ana")
    assert (shares.held("user:ana"), shares.held("user:bob"), shares.held("peer:10.0.0.5")) == (2, 1, 0)


def test_call_limits_count_per_address_and_in_all() -> None:
    limits = CallLimits(max_calls=3, max_calls_per_peer=2)
    limits.take("a")
    limits.take("a")
    with pytest.raises(ResourceExhausted, match="AGENTLOOP_MAX_CALLS_PER_PEER"):
        limits.take("a")
    limits.take("b")
    with pytest.raises(ResourceExhausted, match="AGENTLOOP_MAX_CALLS\\)"):
        limits.take("c")
    limits.give_back("a")
    limits.take("c")
    assert (limits.in_flight, limits.by_peer) == (3, {"a": 1, "b": 1, "c": 1})


def test_a_served_process_lifts_its_descriptor_limit_to_the_hard_one() -> None:
    code = (
        "import resource\n"
        "from agentloop.kernel.serving import open_file_limit, raise_open_file_limit\n"
        "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (min(256, hard), hard))\n"
        "raise_open_file_limit()\n"
        "print(open_file_limit() == (None if hard == resource.RLIM_INFINITY else hard))\n"
    )
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert child.stdout.strip() == "True", child.stderr
