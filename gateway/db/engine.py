"""One async engine per process, tuned per dialect.

SQLite (aiosqlite) gets WAL and a busy timeout on every new connection, so the
telemetry writer, the signal readers and the budget checks can share one file
without "database is locked", a fixed pool of four connections, and writes a batch of
rows as one multi-row INSERT.
PostgreSQL and MariaDB get a pre-pinged, recycled pool so a restarted server costs one
failed checkout, not a failed call.
"""

from __future__ import annotations

import re
from typing import Any, cast

from sqlalchemy import event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.engine.default import DefaultDialect
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import QueuePool

SQLITE_BUSY_TIMEOUT_MS = 5000
# SQLite connections per process, all kept open (no overflow): see _sqlite_pool_kwargs.
SQLITE_POOL_SIZE = 4
POOL_TIMEOUT_SECONDS = 10
# asyncpg quotes the offending value ("invalid input for query argument $8: 1000…").
_ARGUMENT_VALUE = re.compile(r"(query argument \$\d+):.*")


def create_engine(url: str | URL) -> AsyncEngine:
    """Build the async engine for a ``sqlite+aiosqlite``, ``postgresql+asyncpg``
    or ``mysql+aiomysql`` URL."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        engine = create_async_engine(parsed, hide_parameters=True, **_sqlite_pool_kwargs(parsed))
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        # A batch of rows (the telemetry writer's, up to hundreds a statement) goes as one
        # multi-row INSERT rather than one step per row: each step hands the GIL between
        # SQLite's thread and the event loop, which cost the loop about a tenth of a call's
        # CPU under load (docs/performance.md). PostgreSQL's and MariaDB's drivers batch
        # an executemany themselves.
        engine.sync_engine.dialect.use_insertmanyvalues_wo_returning = True
        return engine
    if backend in ("mysql", "mariadb"):
        if "charset" not in parsed.query:
            parsed = parsed.update_query_dict({"charset": "utf8mb4"})
        # Recycle under MariaDB's wait_timeout so an idle pool never hands out a dead link.
        return create_async_engine(parsed, **_pool_kwargs(), pool_recycle=1800)
    return create_async_engine(parsed, **_pool_kwargs(), pool_recycle=3600)


def _sqlite_pool_kwargs(url: URL) -> dict[str, Any]:
    """A file database's pool: ``SQLITE_POOL_SIZE`` connections kept open, none beyond.

    SQLAlchemy's default (5, plus 10 overflow connections) opened and closed an overflow
    connection for each busy moment: a thread, a file open and three PRAGMAs each time,
    and the memory they churned grew a serving process by about 9 MB
    (docs/performance.md#memory). SQLite takes one writer at a time, so more connections
    only move the wait from the pool into SQLite's lock. An in-memory database keeps
    SQLAlchemy's single shared connection.
    """
    dialect = cast(type[DefaultDialect], url.get_dialect())  # aiosqlite: a DefaultDialect
    if not issubclass(dialect.get_pool_class(url), QueuePool):
        return {}
    return {
        "pool_size": SQLITE_POOL_SIZE,
        "max_overflow": 0,
        "pool_timeout": POOL_TIMEOUT_SECONDS,
    }


def _pool_kwargs() -> dict[str, Any]:
    return {
        "pool_size": 10,
        "max_overflow": 10,
        "pool_timeout": POOL_TIMEOUT_SECONDS,
        "pool_pre_ping": True,
        # Bound values never reach error messages or logs (they can be key hashes).
        "hide_parameters": True,
    }


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        # WAL lets readers proceed while the writer commits; NORMAL sync is safe under WAL
        # (a power cut can lose the last commits, never corrupt the file).
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA synchronous=NORMAL")
    finally:
        cursor.close()


def describe_error(exc: BaseException) -> str:
    """A one-line, log-safe account of a database failure: class and first line only.

    SQLAlchemy appends the SQL and a documentation link; the URL (and its
    password) never appears in its messages. Bound values are hidden by the
    engines, and a driver that quotes one in its own message loses it here.
    """
    first_line = (str(exc).splitlines() or [""])[0]
    first_line = _ARGUMENT_VALUE.sub(r"\1: [value hidden]", first_line)
    return f"{type(exc).__name__}: {first_line[:300]}"
