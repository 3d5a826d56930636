"""Alembic environment: async engines on all three dialects.

Alembic runs this file for every command. The URL comes, in order, from the
``url`` attribute set by :mod:`gateway.db.migrate`, ``-x url=...`` on the
``alembic`` command line, ``sqlalchemy.url`` in an ini file, or the
``GATEWAY_DATABASE_URL`` environment variable. A caller that already holds a
connection (an async caller inside ``run_sync``) passes it as the
``connection`` attribute and no engine is made here; it holds the migration lock
(``gateway.db.migrate_lock``) itself. A list as the ``applied`` attribute receives
each revision applied by an upgrade, in order.
"""

from __future__ import annotations

import asyncio
import os

from alembic import context
from alembic.runtime.migration import MigrationInfo
from sqlalchemy.engine import Connection

import gateway.db.tables  # noqa: F401  (registers the tables on the metadata)
from gateway.db.base import metadata
from gateway.db.engine import create_engine
from gateway.db.migrate_lock import migration_lock


def _url() -> str:
    config = context.config
    url = (
        config.attributes.get("url")
        or context.get_x_argument(as_dictionary=True).get("url")
        or config.get_main_option("sqlalchemy.url")
        or os.environ.get("GATEWAY_DATABASE_URL")
    )
    if not url:
        raise RuntimeError("no database URL: pass -x url=... or set GATEWAY_DATABASE_URL")
    return str(url)


def _record_applied(*, step: MigrationInfo, **_: object) -> None:
    applied = context.config.attributes.get("applied")
    if isinstance(applied, list) and step.is_upgrade and step.up_revision_id:
        applied.append(step.up_revision_id)


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        compare_type=True,
        # SQLite cannot ALTER most things; later migrations get batch mode for free.
        render_as_batch=connection.dialect.name == "sqlite",
        on_version_apply=_record_applied,
    )
    with context.begin_transaction():
        context.run_migrations()


async def _run_async(url: str) -> None:
    engine = create_engine(url)
    try:
        async with engine.connect() as connection, migration_lock(connection):
            # Under the lock: a process that waited reads the revision the first left.
            await connection.run_sync(_configure)
            await connection.commit()
    finally:
        await engine.dispose()


def _run_offline(url: str) -> None:
    context.configure(url=url, target_metadata=metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def _main() -> None:
    given = context.config.attributes.get("connection")
    if isinstance(given, Connection):
        _configure(given)
    elif context.is_offline_mode():
        _run_offline(_url())
    else:
        asyncio.run(_run_async(_url()))


_main()
