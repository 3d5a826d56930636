"""Run the Alembic migrations from code: the CLI calls :func:`upgrade` before serving.

The scripts are the repository's top-level ``alembic/`` folder; an installed wheel
carries them inside the package as ``gateway/db/migrations``, so an installed
gateway finds them whatever the working directory. The Alembic ``Config`` is
built here rather than read from an ini file.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.migrate_lock import migration_lock


def _scripts_dir() -> Path:
    here = Path(__file__).resolve()
    installed = here.with_name("migrations")  # where setup.py puts alembic/ in a wheel
    checkout = here.parents[2] / "alembic"  # a source checkout (an editable install)
    for candidate in (installed, checkout):
        # env.py tells the scripts apart from the alembic library's own folder.
        if (candidate / "env.py").is_file():
            return candidate
    raise RuntimeError(f"the migration scripts are missing (looked in {installed}, {checkout})")


MIGRATIONS_DIR = _scripts_dir()


def alembic_config(url: str | None = None, connection: Connection | None = None) -> Config:
    """An Alembic config pointing at the packaged scripts.

    The URL travels as an attribute, not as ``sqlalchemy.url``: ini interpolation
    would choke on a ``%`` in a password.
    """
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR).replace("%", "%%"))
    if url is not None:
        config.attributes["url"] = url
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def upgrade(url: str, revision: str = "head") -> list[str]:
    """Bring the schema to ``revision`` under the migration lock (``migrate_lock``); the
    revisions applied, in order: none when it was there already."""
    config = alembic_config(url)
    applied: list[str] = []
    config.attributes["applied"] = applied
    _blocking(lambda: command.upgrade(config, revision))
    return applied


def downgrade(url: str, revision: str = "base") -> None:
    _blocking(lambda: command.downgrade(alembic_config(url), revision))


async def upgrade_engine(engine: AsyncEngine, revision: str = "head") -> None:
    """The same as :func:`upgrade` for a caller already inside an event loop."""
    async with engine.connect() as connection, migration_lock(connection):
        await connection.run_sync(
            lambda sync: command.upgrade(alembic_config(connection=sync), revision)
        )
        await connection.commit()


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:
        raise RuntimeError("no migration scripts found in " + str(MIGRATIONS_DIR))
    return head


def revision_title(revision: str) -> str:
    """The first line of a revision's docstring."""
    script = ScriptDirectory.from_config(alembic_config()).get_revision(revision)
    doc = script.doc if script is not None else ""
    return (doc.splitlines() or [""])[0]


def known_revisions() -> frozenset[str]:
    """Every revision of this gateway's migration scripts."""
    scripts = ScriptDirectory.from_config(alembic_config())
    return frozenset(script.revision for script in scripts.walk_revisions())


async def schema_revision(engine: AsyncEngine) -> str | None:
    """The revision the database's schema is at, read without changing anything; None
    when it was never migrated (no ``alembic_version`` table, nothing is created)."""
    async with engine.connect() as connection:
        return await connection.run_sync(
            lambda sync: MigrationContext.configure(sync).get_current_revision()
        )


def _blocking(run: Callable[[], None]) -> None:
    # env.py starts its own event loop; from inside a running loop (a test, a
    # lifespan hook) that must happen on another thread.
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        run()
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="alembic") as pool:
        pool.submit(run).result()
