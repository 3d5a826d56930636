"""Upserts that add to counters: atomic in SQL, so concurrent writers never lose an update."""

from __future__ import annotations

from sqlalchemy import Table
from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.dml import Insert


def increment_statement(
    dialect: Dialect, table: Table, key: tuple[str, ...], counters: tuple[str, ...]
) -> Insert:
    """``INSERT ... ON CONFLICT DO UPDATE`` (or ``ON DUPLICATE KEY UPDATE``) adding the counters."""
    if dialect.name in ("mysql", "mariadb"):
        mysql_insert = mysql.insert(table)
        return mysql_insert.on_duplicate_key_update(
            {name: table.c[name] + mysql_insert.inserted[name] for name in counters}
        )
    if dialect.name == "postgresql":
        pg_insert = postgresql.insert(table)
        return pg_insert.on_conflict_do_update(
            index_elements=list(key),
            set_={name: table.c[name] + pg_insert.excluded[name] for name in counters},
        )
    sqlite_insert = sqlite.insert(table)
    return sqlite_insert.on_conflict_do_update(
        index_elements=list(key),
        set_={name: table.c[name] + sqlite_insert.excluded[name] for name in counters},
    )
