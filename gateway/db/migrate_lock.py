"""The lock a schema migration holds, so processes that start at once migrate one at a time.

Replicas started together on a fresh database each ran the migrations: all but one
then failed on a table or an ``alembic_version`` row the first had just created. The
migration now runs under a database lock, held on its own connection while the
revisions are read and applied; the others wait for it, find the schema at head, and
apply nothing:

- PostgreSQL: a session advisory lock (``pg_advisory_lock``) on a fixed key, which
  PostgreSQL scopes to the database;
- MariaDB/MySQL: ``GET_LOCK`` on a name made from the database's name (the names are
  server-wide);
- SQLite: an exclusive transaction (``BEGIN EXCLUSIVE``) that the migrations run in.

A process waits at most ``LOCK_WAIT_SECONDS`` (an hour: a migration that fills the
rollup from millions of rows takes minutes) and then fails. The lock goes with the
connection, so a process that dies mid-migration does not leave it held.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.db.engine import SQLITE_BUSY_TIMEOUT_MS
from gateway.domain.errors import GatewayException

LOCK_WAIT_SECONDS = 3600
# "gatewaymig" in ASCII: any fixed bigint will do; it only has to differ from other locks.
POSTGRES_KEY = 0x676174657761796D
_MARIADB_NAME = "CONCAT('gateway-migrations:', LEFT(SHA2(DATABASE(), 256), 40))"


class MigrationLockTimeout(GatewayException, RuntimeError):
    """Another process held the migration lock past the wait."""


@contextlib.asynccontextmanager
async def migration_lock(connection: AsyncConnection) -> AsyncIterator[None]:
    """Hold the migration lock on ``connection`` for the block. The block commits the
    migrations itself; what it left uncommitted when it fails is rolled back."""
    dialect = connection.dialect.name
    if dialect == "sqlite":
        locked = _sqlite_exclusive(connection)
    elif dialect == "postgresql":
        locked = _postgres_advisory(connection)
    elif dialect in ("mysql", "mariadb"):
        locked = _mariadb_named(connection)
    else:
        raise RuntimeError(f"no migration lock for the {dialect} dialect")
    async with locked:
        yield


@contextlib.asynccontextmanager
async def _postgres_advisory(connection: AsyncConnection) -> AsyncIterator[None]:
    await connection.execute(text(f"SET lock_timeout = '{LOCK_WAIT_SECONDS}s'"))
    try:
        await connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": POSTGRES_KEY})
    except SQLAlchemyError as error:
        raise MigrationLockTimeout(_waited("PostgreSQL advisory lock")) from error
    await connection.execute(text("RESET lock_timeout"))
    await connection.commit()  # the lock is the session's; the migrations take their own
    try:
        yield
    finally:
        await _release(connection, "SELECT pg_advisory_unlock(:key)", {"key": POSTGRES_KEY})


@contextlib.asynccontextmanager
async def _mariadb_named(connection: AsyncConnection) -> AsyncIterator[None]:
    statement = text(f"SELECT GET_LOCK({_MARIADB_NAME}, :seconds)")
    got = (await connection.execute(statement, {"seconds": LOCK_WAIT_SECONDS})).scalar()
    await connection.commit()
    if got != 1:  # 0: timed out; NULL: an error
        raise MigrationLockTimeout(_waited("MariaDB GET_LOCK"))
    try:
        yield
    finally:
        await _release(connection, f"SELECT RELEASE_LOCK({_MARIADB_NAME})", {})


@contextlib.asynccontextmanager
async def _sqlite_exclusive(connection: AsyncConnection) -> AsyncIterator[None]:
    # SQLite's own wait for a lock is its busy timeout: an hour for this connection only.
    await connection.exec_driver_sql(f"PRAGMA busy_timeout = {LOCK_WAIT_SECONDS * 1000}")
    try:
        try:
            await connection.exec_driver_sql("BEGIN EXCLUSIVE")
        except SQLAlchemyError as error:
            raise MigrationLockTimeout(_waited("SQLite exclusive transaction")) from error
        yield  # the migrations run in this transaction; the block's commit ends it
    finally:
        if connection.in_transaction():
            await connection.rollback()
        await connection.exec_driver_sql(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")


async def _release(connection: AsyncConnection, statement: str, params: dict[str, int]) -> None:
    if connection.in_transaction():
        await connection.rollback()  # a failed migration's leftovers, if any
    # A connection that broke has lost the lock with its session: nothing to release then.
    with contextlib.suppress(SQLAlchemyError):
        await connection.execute(text(statement), params)
        await connection.commit()


def _waited(what: str) -> str:
    return f"another process held the {what} of the schema migration for {LOCK_WAIT_SECONDS} s"
