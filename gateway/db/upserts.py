"""The three INSERTs whose SQL differs per database, built for the database in use.

- ``increment``: add to counters (``ON CONFLICT DO UPDATE`` / ``ON DUPLICATE KEY
  UPDATE``), atomic in SQL, so concurrent writers never lose an update;
- ``insert_or_replace``: write a row, replacing some columns of the one already there;
- ``insert_or_ignore``: write a row unless its unique key is there already.

Each imports only the SQLAlchemy dialect it builds for, when first asked: importing the
PostgreSQL and MySQL dialects costs a process on SQLite about 3 MB resident that it never
uses (docs/performance.md#memory), and the same holds the other way round.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import Table
from sqlalchemy.sql.dml import Insert

MYSQL = ("mysql", "mariadb")


def increment(dialect: str, table: Table, key: Sequence[str], counters: Sequence[str]) -> Insert:
    """An INSERT of rows whose counters are added to the row with the same ``key``."""
    if dialect in MYSQL:
        from sqlalchemy.dialects import mysql

        mysql_insert = mysql.insert(table)
        return mysql_insert.on_duplicate_key_update(
            {name: table.c[name] + mysql_insert.inserted[name] for name in counters}
        )
    statement = _conflict_insert(dialect)(table)
    return statement.on_conflict_do_update(  # type: ignore[no-any-return]
        index_elements=list(key),
        set_={name: table.c[name] + statement.excluded[name] for name in counters},
    )


def insert_or_replace(
    dialect: str,
    table: Table,
    values: Mapping[str, Any],
    key: Sequence[str],
    replaced: Mapping[str, Any],
) -> Insert:
    """An INSERT of ``values``; where a row with the same ``key`` exists, it takes
    ``replaced`` instead."""
    if dialect in MYSQL:
        from sqlalchemy.dialects import mysql

        return mysql.insert(table).values(values).on_duplicate_key_update(dict(replaced))
    statement = _conflict_insert(dialect)(table).values(values)
    return statement.on_conflict_do_update(  # type: ignore[no-any-return]
        index_elements=list(key), set_=dict(replaced)
    )


def insert_or_ignore(dialect: str, table: Table) -> Insert:
    """An INSERT that skips a row whose unique key is taken (the database decides)."""
    if dialect in MYSQL:
        from sqlalchemy.dialects import mysql

        return mysql.insert(table).prefix_with("IGNORE")
    return _conflict_insert(dialect)(table).on_conflict_do_nothing()  # type: ignore[no-any-return]


def _conflict_insert(dialect: str) -> Callable[[Table], Any]:
    """PostgreSQL's or SQLite's ``insert``: the two spell ``ON CONFLICT`` alike."""
    if dialect == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql.insert
    from sqlalchemy.dialects import sqlite

    return sqlite.insert
