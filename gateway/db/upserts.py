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

from collections.abc import Mapping, Sequence
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
    if dialect == "postgresql":
        from sqlalchemy.dialects import postgresql

        pg_insert = postgresql.insert(table)
        return pg_insert.on_conflict_do_update(
            index_elements=list(key),
            set_={name: table.c[name] + pg_insert.excluded[name] for name in counters},
        )
    from sqlalchemy.dialects import sqlite

    sqlite_insert = sqlite.insert(table)
    return sqlite_insert.on_conflict_do_update(
        index_elements=list(key),
        set_={name: table.c[name] + sqlite_insert.excluded[name] for name in counters},
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
    if dialect == "postgresql":
        from sqlalchemy.dialects import postgresql

        return (
            postgresql.insert(table)
            .values(values)
            .on_conflict_do_update(index_elements=list(key), set_=dict(replaced))
        )
    from sqlalchemy.dialects import sqlite

    return (
        sqlite.insert(table)
        .values(values)
        .on_conflict_do_update(index_elements=list(key), set_=dict(replaced))
    )


def insert_or_ignore(dialect: str, table: Table) -> Insert:
    """An INSERT that skips a row whose unique key is taken (the database decides)."""
    if dialect in MYSQL:
        from sqlalchemy.dialects import mysql

        return mysql.insert(table).prefix_with("IGNORE")
    if dialect == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql.insert(table).on_conflict_do_nothing()
    from sqlalchemy.dialects import sqlite

    return sqlite.insert(table).on_conflict_do_nothing()
