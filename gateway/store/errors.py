"""Database errors: which ones retrying cures, how long the store retries, and what reaches a user.

One place classifies every failure the drivers raise (`is_transient`), for
every caller: the store retries those for its budget (`with_store_retries`,
`retried`), then raises StoreUnavailable, an UNAVAILABLE error that carries
RetryInfo, so a client retries instead of taking the database's restart for a
bug. A database that is down, restarting, shutting down or refusing
connections, a connection that died under a statement (or sat dead in the
pool), a deadlock or a serialization failure (the transaction was rolled back
whole): all are transient. A refused write (a constraint), a bad statement or
a limit the query broke is not: retrying it would fail the same way.

A query that breaks a limit of the server's (`temp_file_limit`, another
program limit) becomes QueryTooLarge, RESOURCE_EXHAUSTED, at the store's
boundary: a clean error naming the limit, never INTERNAL.

Errors leaving the store never carry SQL text or bound values. SQLAlchemy
renders a failed statement's error with the statement and its bound
parameters, and those strings travel on: into a run's error event, a gRPC
status, a log line at WARNING. Parameters are message text, memory facts and
ids: one user's data in another reader's view. So every error leaving the
store is scrubbed in place: the full detail is logged at DEBUG first, then the
statement and parameters are dropped from the exception. The exception keeps
its type and its driver error (`orig`), so callers that classify failures
still see what they need.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sqlite3
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

import asyncpg
import asyncpg.exceptions
import sqlalchemy.exc
from sqlalchemy.exc import StatementError

from agentloop.kernel.errors import Reason, ResourceExhausted, Unavailable
from agentloop.kernel.retry import STORE_BACKOFF, STORE_RETRY_BUDGET_S

log = logging.getLogger(__name__)
T = TypeVar("T")
P = ParamSpec("P")

TRANSIENT: tuple[type[BaseException], ...] = (
    sqlite3.OperationalError,
    asyncpg.exceptions.PostgresConnectionError,
    asyncpg.exceptions.InterfaceError,
    asyncpg.exceptions.CannotConnectNowError,
    asyncpg.exceptions.AdminShutdownError,
    asyncpg.exceptions.TooManyConnectionsError,
    sqlalchemy.exc.DBAPIError,
    sqlalchemy.exc.DisconnectionError,
    sqlalchemy.exc.TimeoutError,
    ConnectionError,
    OSError,
    TimeoutError,
)
"""Types a database fault may arrive as, for `except` clauses that read and try again later.

Broad on purpose (a DBAPIError may also be a refused write): where the
answer matters, `is_transient` decides.
"""

DATABASE_ERRORS: tuple[type[BaseException], ...] = (
    sqlalchemy.exc.SQLAlchemyError,
    asyncpg.exceptions.PostgresError,
    asyncpg.exceptions.InterfaceError,
    sqlite3.Error,
)
"""Errors whose text may quote SQL and its bound parameters (user data): never shown to clients."""

_CONNECTION_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "53300"})
"""admin_shutdown, crash_shutdown, cannot_connect_now ("the database system is starting up"),
too_many_connections (and class 08, connection_exception)."""
_ROLLED_BACK_SQLSTATES = frozenset({"40001", "40P01"})
"""serialization_failure, deadlock_detected: the server rolled the whole transaction back; run it again."""
_LIMIT_SQLSTATES = {
    "53400": "a configured limit (such as temp_file_limit)",
    "54000": "a program limit",
    "53100": "the disk space it has",
}
_SQLITE_TRANSIENT = ("locked", "busy", "unable to open database file", "disk i/o error")


def driver_error(exc: BaseException) -> BaseException:
    """The driver's own exception under SQLAlchemy's wrappers (asyncpg's, sqlite3's), else `exc`."""
    if isinstance(exc, sqlalchemy.exc.DBAPIError) and exc.orig is not None:
        exc = exc.orig
    # SQLAlchemy's async adapters raise their own DBAPI-style error "from" the driver's (and
    # a pool's connect hands that one out unwrapped).
    if type(exc).__module__.startswith("sqlalchemy.") and isinstance(exc.__cause__, Exception):
        return exc.__cause__
    return exc


def sqlstate(exc: BaseException) -> str:
    """The SQLSTATE a Postgres error carries ("" for other errors)."""
    state = getattr(driver_error(exc), "sqlstate", None)
    return state if isinstance(state, str) else ""


def is_connection_error(exc: BaseException) -> bool:
    """The connection, not the statement, failed: the server is gone, restarting, or refused us.

    Such a connection is useless (or was never made), and the others in
    the pool may have died with it.
    """
    if isinstance(exc, sqlalchemy.exc.DBAPIError) and exc.connection_invalidated:
        return True
    if isinstance(exc, sqlalchemy.exc.DisconnectionError | sqlalchemy.exc.TimeoutError):
        return True
    cause = driver_error(exc)
    if isinstance(
        cause,
        asyncpg.exceptions.PostgresConnectionError
        | asyncpg.exceptions.InterfaceError
        # asyncpg's protocol in a state it cannot leave (an error it was consuming when the
        # server went away): the connection is unusable.
        | asyncpg.exceptions.InternalClientError,
    ):
        return True
    if isinstance(cause, asyncpg.PostgresError):
        return sqlstate(cause) in _CONNECTION_SQLSTATES or sqlstate(cause).startswith("08")
    return isinstance(cause, ConnectionError | OSError | TimeoutError)


def _sqlite_busy(exc: BaseException) -> bool:
    """SQLite's file is locked by another writer, or briefly out of reach: the connection itself is fine."""
    cause = driver_error(exc)
    return isinstance(cause, sqlite3.OperationalError) and any(
        part in str(cause).lower() for part in _SQLITE_TRANSIENT
    )


def is_transient(exc: BaseException) -> bool:
    """Whether the same operation, tried again a little later, may well succeed."""
    if isinstance(exc, StoreUnavailable):
        return False  # a retry budget was already spent on it
    return is_connection_error(exc) or sqlstate(exc) in _ROLLED_BACK_SQLSTATES or _sqlite_busy(exc)


class StoreUnavailable(Unavailable):
    """The database stayed unreachable (or kept failing transiently) for the whole retry budget.

    UNAVAILABLE with RetryInfo for a client. A run that meets it stops in this
    process, unrecorded: it stays RUNNING but this gateway stops renewing its
    lease, and once the lease expires any gateway (this one included)
    resumes it from its last checkpoint.
    """

    def __init__(self, what: str, cause: BaseException) -> None:
        # The driver's type, not its message: that may name the database's host and port.
        super().__init__(
            f"the database is unavailable ({what}: {type(driver_error(cause)).__name__}); retry later",
            reason=Reason.DATABASE_UNAVAILABLE,
            retry_delay_s=1.0,
        )


class QueryTooLarge(ResourceExhausted):
    """The database refused to finish a query that broke one of its limits (temp_file_limit…)."""

    def __init__(self, what: str, cause: BaseException) -> None:
        limit = _LIMIT_SQLSTATES.get(sqlstate(cause), "one of its limits")
        super().__init__(
            f"the database stopped {what}: it needed more than {limit} allows; "
            "ask for less at once (a smaller page)"
        )


def describe_cause(exc: BaseException) -> str:
    """The driver error's type and first line: never SQL text or bound values."""
    cause = driver_error(exc)
    if isinstance(cause, sqlalchemy.exc.StatementError):
        return type(cause).__name__
    lines = str(cause).strip().splitlines()
    return f"{type(cause).__name__}: {lines[0]}" if lines else type(cause).__name__


def describe_failure(exc: BaseException) -> str:
    """What a client may be told about an unexpected failure: never SQL text or bound parameters."""
    if isinstance(exc, DATABASE_ERRORS) or isinstance(driver_error(exc), DATABASE_ERRORS):
        kind = type(driver_error(exc)).__name__
        return f"the database refused a write ({kind}); details are in the gateway log"
    return f"{type(exc).__name__}: {exc}"


async def with_store_retries(
    operation: Callable[[], Awaitable[T]], what: str, budget_s: float = STORE_RETRY_BUDGET_S
) -> T:
    """Run a store operation, retrying transient failures with jittered backoff for `budget_s`.

    Past the budget: StoreUnavailable. A query that broke a server limit:
    QueryTooLarge. Anything else propagates as it is.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + budget_s
    attempt = 0
    while True:
        try:
            return await operation()
        except Exception as exc:
            if sqlstate(exc) in _LIMIT_SQLSTATES:
                raise QueryTooLarge(what, exc) from exc
            if not is_transient(exc):
                raise
            delay = STORE_BACKOFF.delay_s(attempt)
            if loop.time() + delay > deadline:
                raise StoreUnavailable(what, exc) from exc
            log.warning("store %s failed (%s); retrying in %.2fs", what, describe_cause(exc), delay)
            await asyncio.sleep(delay)
            attempt += 1


class _Budgeted(Protocol):
    retry_budget_s: float


_S = TypeVar("_S", bound=_Budgeted)


def retried(
    method: Callable[Concatenate[_S, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[_S, P], Coroutine[Any, Any, T]]:
    """A store method retried through `with_store_retries` for its store's `retry_budget_s`.

    For methods that are safe to run again after a failure whose outcome is
    unknown (a connection lost around COMMIT): reads, and writes whose second
    run finds the first one's work and keeps it.
    """
    what = method.__name__.replace("_", " ")

    async def wrapper(self: _S, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await with_store_retries(lambda: method(self, *args, **kwargs), what, self.retry_budget_s)

    functools.update_wrapper(wrapper, method)
    return wrapper


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
