"""The current time, because a model has no clock of its own."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from tool_svc.registry import tool


@tool
def current_time(timezone: str = "UTC") -> str:
    """Get the current date and time; use it whenever the answer depends on "now" or "today".

    Args:
        timezone: An IANA time zone name such as "Europe/Paris" or "America/New_York".
    """
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(
            f"unknown time zone {timezone!r}; use an IANA name such as 'UTC', 'Europe/Paris' or 'Asia/Tokyo'"
        ) from None
    return datetime.now(zone).isoformat(timespec="seconds")
