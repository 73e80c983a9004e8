"""Backoff between attempts: grows as gRPC's policy does, stays under its cap, jitters as asked."""

from __future__ import annotations

import pytest

from agentloop.client import AgentClient
from agentloop.kernel import retry
from agentloop.kernel.retry import STORE_BACKOFF, Backoff, RetryPolicy
from agentloop.kernel.settings import GatewaySettings


def test_without_jitter_each_wait_doubles() -> None:
    backoff = Backoff(0.2, jitter=0.0)
    assert [backoff.delay_s(n) for n in range(4)] == pytest.approx([0.2, 0.4, 0.8, 1.6])


@pytest.mark.parametrize("attempt", range(12))
def test_jitter_keeps_its_share_of_the_capped_wait(attempt: int) -> None:
    full = min(2.0, 0.05 * 2**attempt)
    for _ in range(50):
        assert full * 0.5 <= STORE_BACKOFF.delay_s(attempt) <= full
        assert 0.0 <= Backoff(0.05, 2.0).delay_s(attempt) <= full


def test_grpc_and_the_gateway_back_off_alike() -> None:
    policy = RetryPolicy(backoff_s=0.1, max_backoff_s=0.3)
    grpc_policy = policy.grpc_retry_policy()
    assert grpc_policy is not None
    assert grpc_policy["backoffMultiplier"] == retry.MULTIPLIER
    assert all(policy.delay_s(n) <= 0.3 for n in range(8) for _ in range(20))


async def test_settings_and_client_default_to_the_policy_figures() -> None:
    settings, policy = GatewaySettings(), RetryPolicy()
    assert (settings.rpc_attempts, settings.rpc_backoff_s, settings.rpc_wait_s) == (
        policy.attempts,
        policy.backoff_s,
        policy.wait_s,
    )
    assert settings.store_retry_budget_s == retry.STORE_RETRY_BUDGET_S
    async with AgentClient("127.0.0.1:1", token="") as client:
        assert (client.reattach_attempts, client.reattach_backoff_s) == (
            retry.CLIENT_REATTACH_ATTEMPTS,
            retry.CLIENT_REATTACH_BACKOFF_S,
        )
