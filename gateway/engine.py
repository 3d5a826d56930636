"""One async engine per process, tuned per dialect.

SQLite (aiosqlite) gets WAL and a busy timeout on every new connection, so the
telemetry writer, the signal readers and the budget checks can share one file
without "database is locked", and writes a batch of rows as one multi-row INSERT.
PostgreSQL and MariaDB get a pre-pinged, recycled pool so a restarted server costs one
failed checkout, not a failed call.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

SQLITE_BUSY_TIMEOUT_MS = 5000
# asyncpg quotes the offending value ("invalid input for query argument $8: 1000…").
_ARGUMENT_VALUE = re.compile(r"(query argument \$\d+):.*")


def create_engine(url: str | URL) -> AsyncEngine:
    """Build the async engine for a ``sqlite+aiosqlite``, ``postgresql+asyncpg``
    or ``mysql+aiomysql`` URL."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        engine = create_async_engine(parsed, hide_parameters=True)
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


def _pool_kwargs() -> dict[str, Any]:
    return {
        "pool_size": 10,
        "max_overflow": 10,
        "pool_timeout": 10,
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
