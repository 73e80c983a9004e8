"""Durable state of the gateway: threads, runs, checkpoints, messages, tool results and events."""

import logging

# Alembic logs a line per plugin it sets up, at INFO, when it is first imported
# (by `gateway.store.migrate`): noise in front of the lines that say what the
# gateway is doing, so it is quietened before that import can happen.
logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)
