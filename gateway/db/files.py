"""Where a SQLite URL keeps its file: read-only commands check it exists before they open it.

SQLite creates a missing file on first connect, so a command that only reads (``gateway
explain``) run from another folder than the server's would leave an empty ``gateway.db``
there for a relative ``sqlite+aiosqlite:///gateway.db``, then report a missing schema.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import make_url


def sqlite_file(url: str) -> Path | None:
    """The file a SQLite URL names, as SQLite resolves it (a relative path against the
    current folder); None for another database, an in-memory one or a ``file:`` URI."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return None
    database = parsed.database or ""
    if database in ("", ":memory:") or database.startswith("file:"):
        return None
    return Path(database)


def missing_database(url: str) -> str | None:
    """Why a read-only command must not open ``url`` (its SQLite file does not exist), or
    None. Names the file as resolved, and the folder a relative path was resolved in."""
    path = sqlite_file(url)
    if path is None or path.exists():
        return None
    where = "" if path.is_absolute() else f", a path relative to the current folder {Path.cwd()}"
    return (
        f"the SQLite database {path.absolute()} does not exist (database.url names "
        f"{str(path)!r}{where}): run the command from the folder the server runs in, give "
        "database.url an absolute path, or create the database with `gateway db upgrade`"
    )
