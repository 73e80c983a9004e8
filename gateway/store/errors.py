"""Database errors made fit to reach a user: no SQL text, no bound values.

SQLAlchemy renders a failed statement's error with the statement and its
bound parameters, and those strings travel on: into a run's error event, a
gRPC status, a log line at WARNING. Parameters are message text, memory facts
and ids: one user's data in another reader's view. So every error leaving the
store is scrubbed in place: the full detail is logged at DEBUG first, then the
statement and parameters are dropped from the exception. The exception keeps
its type and its driver error (`orig`), so callers that retry transient
failures by type still see what they catch.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.exc import StatementError

log = logging.getLogger(__name__)


def scrub(exc: StatementError) -> StatementError:
    """Drop the statement and parameters from `exc` (logged at DEBUG first); returns `exc`."""
    if exc.statement is not None or exc.params is not None:
        log.debug("store statement failed: %s", exc)
        exc.statement = None
        exc.params = None
    return exc


@contextmanager
def scrubbed() -> Iterator[None]:
    """Scrub every SQLAlchemy statement error raised inside the block."""
    try:
        yield
    except StatementError as exc:
        scrub(exc)
        raise
