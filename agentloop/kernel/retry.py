"""How agentloop tries again: backoff between attempts and the default retry figures.

Every loop that tries again waits `Backoff.delay_s` (the gateway re-issuing a tools
batch, a store write while the database is away, the client reattaching a stream), and
gRPC's own retry policy (`RetryPolicy.grpc_retry_policy`, put in each channel's service
config by `agentloop.kernel.channels`) grows by the same `MULTIPLIER`, so a setting such as
AGENTLOOP_RPC_BACKOFF_S means one thing wherever a call is repeated.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

import grpc

MULTIPLIER = 2
"""Each wait is this many times the one before (up to its cap), in gRPC's policy as here."""

RPC_ATTEMPTS = 4
RPC_BACKOFF_S = 0.2
RPC_MAX_BACKOFF_S = 5.0
RPC_WAIT_S = 60.0
"""Gateway → Reasoner / ToolService calls (AGENTLOOP_RPC_ATTEMPTS, _BACKOFF_S, _WAIT_S)."""

STORE_RETRY_BUDGET_S = 15.0
"""How long a store operation is retried while the database is away (AGENTLOOP_STORE_RETRY_BUDGET_S)."""

CLIENT_REATTACH_ATTEMPTS = 5
CLIENT_REATTACH_BACKOFF_S = 0.2
"""agentloop.client: a broken stream reattached (or a call sent again) this often, this far apart."""

# gRPC refuses retry policies of more than 5 attempts (it clamps them); wait-for-ready covers
# longer outages, so more attempts would add nothing.
_MAX_GRPC_ATTEMPTS = 5


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff: `base_s` × MULTIPLIER^attempt, at most `max_s`, part of it random.

    `jitter` is the share of each wait drawn at random: 1 waits anywhere from 0 to the
    full delay (callers that retry together spread out the most), 0.5 at least half of
    it, 0 exactly the delay.
    """

    base_s: float
    max_s: float = math.inf
    jitter: float = 1.0

    def delay_s(self, attempt: int) -> float:
        """The wait before attempt `attempt + 1` (`attempt` counts from 0)."""
        delay = min(self.max_s, self.base_s * float(MULTIPLIER) ** attempt)
        return delay * random.uniform(1.0 - self.jitter, 1.0)


STORE_BACKOFF = Backoff(base_s=0.05, max_s=2.0, jitter=0.5)
"""Between store attempts: soon after a blip, at most every 2 s during an outage."""


@dataclass(frozen=True)
class RetryPolicy:
    """How calls to another agentloop service are retried: the one definition of attempts and backoff.

    `attempts` and `backoff_s` go into gRPC's retry policy (`grpc_retry_policy`) and
    into the waits of calls the gateway re-issues itself (`delay_s`); `wait_s` bounds
    how long a call waits for an unreachable dependency to come back before it fails
    UNAVAILABLE (see `gateway.deps.clients`).
    """

    attempts: int = RPC_ATTEMPTS
    backoff_s: float = RPC_BACKOFF_S
    max_backoff_s: float = RPC_MAX_BACKOFF_S
    wait_s: float = RPC_WAIT_S

    def should_retry(self, code: grpc.StatusCode, attempt: int) -> bool:
        """Whether a call the gateway re-issues itself (after attempt `attempt`, 0-based) goes again."""
        return code == grpc.StatusCode.UNAVAILABLE and attempt + 1 < self.attempts

    def delay_s(self, attempt: int) -> float:
        """Full-jitter exponential backoff before attempt `attempt + 1` of a re-issued call."""
        return Backoff(self.backoff_s, self.max_backoff_s).delay_s(attempt)

    def grpc_retry_policy(self) -> dict[str, Any] | None:
        """The `retryPolicy` of a method config, or None when retries are off (one attempt)."""
        attempts = min(_MAX_GRPC_ATTEMPTS, self.attempts)
        if attempts < 2:
            return None
        initial = max(0.001, self.backoff_s)
        return {
            "maxAttempts": attempts,
            "initialBackoff": f"{initial:.3f}s",
            "maxBackoff": f"{max(initial, self.max_backoff_s):.3f}s",
            "backoffMultiplier": MULTIPLIER,
            "retryableStatusCodes": ["UNAVAILABLE"],
        }
