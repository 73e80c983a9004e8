"""Logging setup shared by every agentloop process."""

from __future__ import annotations

import logging
import os


def configure(default_level: str = "INFO") -> None:
    """Log to stderr at AGENTLOOP_LOG_LEVEL (default INFO), one line per record."""
    level = os.environ.get("AGENTLOOP_LOG_LEVEL", default_level).upper()
    logging.basicConfig(
        level=level,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
