"""Only a database that cannot be reached is "down"; any other database error is not."""

from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy.exc import (
    DataError,
    IntegrityError,
    OperationalError,
    ProgrammingError,
)
from sqlalchemy.exc import TimeoutError as PoolTimeout

from gateway.db.engine import describe_error
from gateway.db.failures import is_connection_failure


class _PgError(Exception):
    def __init__(self, message: str, sqlstate: str) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


class _MySqlError(Exception):
    pass


def _sqlite(code: int, message: str) -> sqlite3.OperationalError:
    error = sqlite3.OperationalError(message)
    error.sqlite_errorcode = code
    return error


@pytest.mark.parametrize(
    "error",
    [
        ConnectionRefusedError(111, "Connect call failed"),
        TimeoutError(),
        PoolTimeout("QueuePool limit of size 10 overflow 10 reached"),
        OperationalError("SELECT 1", {}, _MySqlError(2003, "Can't connect to MySQL server")),
        OperationalError("SELECT 1", {}, _MySqlError(2013, "Lost connection during query")),
        OperationalError("SELECT 1", {}, _PgError("connection is closed", "08003")),
        OperationalError("SELECT 1", {}, _PgError("the database system is shutting down", "57P03")),
        OperationalError("SELECT 1", {}, _sqlite(14, "unable to open database file")),
        OperationalError("SELECT 1", {}, _sqlite(5, "database is locked")),
        ProgrammingError("SELECT 1", {}, Exception("gone"), connection_invalidated=True),
    ],
)
def test_cannot_connect_lost_connections_and_pool_timeouts_are_outages(error: Exception) -> None:
    assert is_connection_failure(error)


@pytest.mark.parametrize(
    "error",
    [
        DataError("UPDATE", {}, _PgError("numeric field overflow", "22003")),
        DataError("UPDATE", {}, _MySqlError(1264, "Out of range value for column 'cost'")),
        OperationalError("UPDATE", {}, _sqlite(1, "no such table: budget_counters")),
        ProgrammingError("UPDATE", {}, _PgError('relation "x" does not exist', "42P01")),
        IntegrityError("INSERT", {}, _MySqlError(1062, "Duplicate entry")),
        OverflowError("Python int too large to convert to SQLite INTEGER"),
        ValueError("anything else"),
    ],
)
def test_data_and_statement_errors_are_not_outages(error: Exception) -> None:
    assert not is_connection_failure(error)


def test_a_value_a_driver_quotes_in_its_message_is_not_logged() -> None:
    error = DataError(
        "INSERT",
        {},
        Exception("invalid input for query argument $8: 10000000000000000000 (out of range)"),
    )
    described = describe_error(error)
    assert "10000000000000000000" not in described
    assert "query argument $8: [value hidden]" in described
