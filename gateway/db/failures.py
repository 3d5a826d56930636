"""Which database errors mean "the database is down", as opposed to "this statement failed".

Only the first kind may be survived by admitting a call unchecked: a data error
(an overflowing value, a missing table, a constraint) says nothing about the
database's reach, and a caller who could provoke one would pass every budget.
"""

from __future__ import annotations

from sqlalchemy.exc import DataError, DBAPIError, DisconnectionError, IntegrityError, StatementError
from sqlalchemy.exc import TimeoutError as PoolTimeout

# PostgreSQL SQLSTATEs: class 08 (connection exception), class 28 (the login refused),
# an unknown database, too many connections, and the server shutting down or starting up.
_PG_CLASSES = ("08", "28")
_PG_CODES = frozenset({"3D000", "53300", "57P01", "57P02", "57P03"})
# MySQL/MariaDB error numbers: cannot connect, access or database refused at login, too
# many connections, server shutdown, host blocked, gone away, lost or killed connection.
_MYSQL_CODES = frozenset(
    {1040, 1044, 1045, 1049, 1053, 1129, 1927, 2002, 2003, 2005, 2006, 2013, 2055, 4031}
)
# PostgreSQL SQLSTATE classes of a refused value: 22 data exception, 23 integrity violation.
_PG_VALUE_CLASSES = ("22", "23")
_VALUE_ERRORS = (ValueError, TypeError, OverflowError)
# SQLite primary result codes: the file cannot be opened, or the lock wait timed out.
_SQLITE_BUSY = 5
_SQLITE_CANTOPEN = 14


def is_connection_failure(error: BaseException) -> bool:
    """Cannot connect, connection lost or invalidated, pool timeout: the database is down."""
    if isinstance(error, OSError | PoolTimeout | DisconnectionError):
        return True  # asyncpg raises OSError itself when it cannot connect
    if not isinstance(error, DBAPIError):
        return False
    if error.connection_invalidated:
        return True
    original = error.orig
    if isinstance(original, OSError) or isinstance(getattr(original, "__cause__", None), OSError):
        return True
    return _is_down_code(original)


def is_busy(error: BaseException) -> bool:
    """The database answers but is saturated: every pooled connection stayed checked out
    past the pool's timeout, or SQLite's write lock stayed taken past its busy timeout.

    Both are outages for :func:`is_connection_failure` (a reader or the telemetry writer
    retries or skips alike), but a budget check tells them apart: a busy database is
    waited for, never answered by admitting the call unchecked, because saturation is
    exactly when a burst of calls would overrun a budget.
    """
    if isinstance(error, PoolTimeout):
        return True
    original = getattr(error, "orig", None) if isinstance(error, DBAPIError) else None
    sqlite_code = getattr(original, "sqlite_errorcode", None)
    return isinstance(sqlite_code, int) and sqlite_code & 0xFF == _SQLITE_BUSY


def _is_down_code(original: BaseException | None) -> bool:
    sqlstate = getattr(original, "sqlstate", None) or getattr(original, "pgcode", None)
    if isinstance(sqlstate, str) and (sqlstate[:2] in _PG_CLASSES or sqlstate in _PG_CODES):
        return True
    sqlite_code = getattr(original, "sqlite_errorcode", None)
    if isinstance(sqlite_code, int):
        return sqlite_code & 0xFF in (_SQLITE_BUSY, _SQLITE_CANTOPEN)
    args: tuple[object, ...] = tuple(getattr(original, "args", ()))
    return bool(args) and isinstance(args[0], int) and args[0] in _MYSQL_CODES


def is_rejected_value(error: BaseException) -> bool:
    """The database (or the driver, binding it) refused a value of the statement: out of
    range, wrong type, a constraint. Another row would pass; retrying this one never will.

    Other statement errors (a missing table while a migration runs, a syntax error) are
    not: they fail every row alike, and are retried as an outage is.
    """
    if is_connection_failure(error):
        return False
    if isinstance(error, DataError | IntegrityError):
        return True
    if isinstance(error, DBAPIError):
        original = error.orig
        sqlstate = getattr(original, "sqlstate", None) or getattr(original, "pgcode", None)
        if isinstance(sqlstate, str) and sqlstate[:2] in _PG_VALUE_CLASSES:
            return True
        # asyncpg refuses a value while encoding it (its DataError is a ValueError), and
        # SQLAlchemy's adaptor wraps it in a plain DBAPIError.
        cause = getattr(original, "__cause__", None)
        return isinstance(original, _VALUE_ERRORS) or isinstance(cause, _VALUE_ERRORS)
    if isinstance(error, StatementError):  # raised binding a value, before the database
        return True
    return isinstance(error, _VALUE_ERRORS)
