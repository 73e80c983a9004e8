"""Run slots shared between callers: no caller may hold more than its share of a gateway's runs.

A gateway executes at most `max_active_runs` runs at once. Without shares, one
caller starting runs as fast as it can (one user, or one address when nobody
authenticates; one connection is enough) would take every slot, and everyone
else would be refused until its runs ended. Each caller holds at most `share`
slots (GatewaySettings.run_share, half of them by default), so the rest always
stays for the others. A run cannot be pre-empted, so the share is a cap taken
when a run is admitted and given back when its task ends, not a weight.

Who the caller is comes from agentloop.kernel.call_limits.current_caller: the bearer
token's user when authentication is on, else the client's address (a user_id
in the request is the client's word and would let one client pose as many).
"""

from __future__ import annotations

from agentloop.kernel.errors import Reason, ResourceExhausted

RETRY_DELAY_S = 1.0
"""What RetryInfo suggests to a caller at its share: one of its runs must end first."""


class RunShares:
    """How many run slots each caller holds, and the share none may pass.

    Synchronous, on the gateway's one event loop: two admissions cannot both
    take a caller's last slot.
    """

    def __init__(self, share: int) -> None:
        self.share = share
        self._held: dict[str, int] = {}

    def held(self, caller: str) -> int:
        """The slots `caller` holds now."""
        return self._held.get(caller, 0)

    def take(self, caller: str) -> None:
        """One more slot for `caller`, or ResourceExhausted (TOO_MANY_RUNS_FOR_CALLER) at its share."""
        held = self.held(caller)
        if held >= self.share:
            raise ResourceExhausted(
                f"you already run {held} {'run' if held == 1 else 'runs'} on this gateway, your share "
                "of its slots (AGENTLOOP_MAX_ACTIVE_RUNS_PER_CALLER); retry when one has ended",
                reason=Reason.TOO_MANY_RUNS_FOR_CALLER,
                retry_delay_s=RETRY_DELAY_S,
            )
        self._held[caller] = held + 1

    def give_back(self, caller: str) -> None:
        """`caller`'s run ended (or never started): its slot is free."""
        left = self.held(caller) - 1
        if left > 0:
            self._held[caller] = left
        else:
            self._held.pop(caller, None)
