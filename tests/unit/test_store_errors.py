"""What a retry may cure, decided in one place for every driver error and every wrapping of it."""

from __future__ import annotations

import sqlite3

import asyncpg
import grpc
import pytest
import sqlalchemy.exc
from sqlalchemy.dialects.postgresql import asyncpg as sa_asyncpg

from gateway.store.errors import (
    QueryTooLarge,
    StoreUnavailable,
    describe_failure,
    is_connection_error,
    is_transient,
    with_store_retries,
)

_ADAPTER = sa_asyncpg.AsyncAdapt_asyncpg_dbapi(asyncpg)


def adapted(cause: Exception) -> Exception:
    """As SQLAlchemy's asyncpg adapter raises it (what a pool connect hands out unwrapped)."""
    error = _ADAPTER.Error(str(cause))
    error.__cause__ = cause
    return error


def wrapped(cause: Exception) -> sqlalchemy.exc.DBAPIError:
    """As a statement executed through SQLAlchemy raises it."""
    return sqlalchemy.exc.OperationalError("SELECT 1", {}, adapted(cause))


RESTARTING = [
    asyncpg.exceptions.AdminShutdownError("terminating connection due to administrator command"),
    asyncpg.exceptions.CannotConnectNowError("the database system is starting up"),
    asyncpg.exceptions.CannotConnectNowError("the database system is shutting down"),
    asyncpg.exceptions.CrashShutdownError(
        "terminating connection because of crash of another server process"
    ),
    asyncpg.exceptions.ConnectionDoesNotExistError("connection was closed in the middle of operation"),
    asyncpg.exceptions.TooManyConnectionsError("sorry, too many clients already"),
    asyncpg.exceptions.InterfaceError("connection is closed"),
    asyncpg.exceptions.InternalClientError("cannot switch to state 12; another operation (2) is in progress"),
    ConnectionResetError(104, "Connection reset by peer"),
    ConnectionRefusedError(111, "Connect call failed"),
]


@pytest.mark.parametrize("cause", RESTARTING, ids=lambda e: type(e).__name__)
def test_a_database_that_is_restarting_is_a_connection_error_however_it_arrives(cause: Exception) -> None:
    for form in (cause, adapted(cause), wrapped(cause)):
        assert is_connection_error(form), form
        assert is_transient(form), form


def test_a_transaction_the_server_rolled_back_whole_is_retried_on_the_same_kind_of_connection() -> None:
    for cause in (
        asyncpg.exceptions.DeadlockDetectedError("deadlock detected"),
        asyncpg.exceptions.SerializationError("could not serialize access"),
    ):
        assert is_transient(wrapped(cause))
        assert not is_connection_error(wrapped(cause))


def test_a_locked_sqlite_file_is_retried_and_keeps_its_connection() -> None:
    locked = sqlite3.OperationalError("database is locked")
    for form in (locked, sqlalchemy.exc.OperationalError("INSERT", {}, locked)):
        assert is_transient(form)
        assert not is_connection_error(form)
    assert not is_transient(sqlite3.OperationalError("no such table: runs"))


def test_refused_writes_and_bad_statements_are_not_retried() -> None:
    for cause in (
        asyncpg.exceptions.UniqueViolationError("duplicate key value violates unique constraint"),
        asyncpg.exceptions.UndefinedTableError('relation "runs" does not exist'),
        asyncpg.exceptions.QueryCanceledError("canceling statement due to statement timeout"),
        asyncpg.exceptions.ConfigurationLimitExceededError("temporary file size exceeds temp_file_limit"),
    ):
        assert not is_transient(wrapped(cause)), cause
    assert not is_transient(sqlalchemy.exc.IntegrityError("INSERT", {}, sqlite3.IntegrityError("UNIQUE")))
    assert not is_transient(ValueError("a bug"))


async def test_past_the_budget_a_restart_is_unavailable_with_a_retry_delay_and_no_address() -> None:
    async def refused() -> None:
        raise wrapped(ConnectionRefusedError(111, "Connect call failed ('10.0.0.7', 5432)"))

    with pytest.raises(StoreUnavailable) as info:
        await with_store_retries(refused, "read the run", budget_s=0.2)
    assert info.value.code == grpc.StatusCode.UNAVAILABLE
    assert info.value.retry_delay_s
    assert (
        info.value.message
        == "the database is unavailable (read the run: ConnectionRefusedError); retry later"
    )
    assert not is_transient(info.value)  # a second budget is not spent on it


async def test_a_query_past_a_server_limit_is_resource_exhausted() -> None:
    async def spilled() -> None:
        raise wrapped(
            asyncpg.exceptions.ConfigurationLimitExceededError("temporary file size exceeds temp_file_limit")
        )

    with pytest.raises(QueryTooLarge) as info:
        await with_store_retries(spilled, "list memories")
    assert info.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_a_failure_told_to_a_client_names_the_driver_error_not_its_statement() -> None:
    told = describe_failure(wrapped(asyncpg.exceptions.UniqueViolationError("duplicate key")))
    assert told == "the database refused a write (UniqueViolationError); details are in the gateway log"
    assert "SELECT" not in describe_failure(adapted(asyncpg.exceptions.UniqueViolationError("x")))
