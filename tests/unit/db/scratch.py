"""Scratch databases for the database tests: SQLite always, PostgreSQL and MariaDB when
GATEWAY_TEST_POSTGRES_URL / GATEWAY_TEST_MARIADB_URL are set.

The servers are shared, so every test module gets its own freshly created
database (``gwtest_<random>``), migrated to head, downgraded to base and
dropped at the end. The URLs' users must be allowed to create databases.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import uuid
from collections.abc import AsyncIterator, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

import gateway.db.tables  # noqa: F401  (registers the tables)
from gateway.db import migrate
from gateway.db.base import metadata
from gateway.db.engine import create_engine
from tests.support import migrated as migrated_support

SERVER_URLS = {
    "postgresql": "GATEWAY_TEST_POSTGRES_URL",
    "mariadb": "GATEWAY_TEST_MARIADB_URL",
}


def _backend_param(backend: str) -> Any:
    variable = SERVER_URLS.get(backend)
    missing = variable is not None and not os.environ.get(variable)
    return pytest.param(
        backend,
        id=backend,
        marks=pytest.mark.skipif(missing, reason=f"{variable} is not set"),
    )


BACKENDS = [_backend_param(name) for name in ("sqlite", "postgresql", "mariadb")]


def _run(coroutine: Coroutine[Any, Any, None]) -> None:
    # Fixtures may run while pytest-asyncio's loop is alive: use a thread of our own.
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, coroutine).result()


async def _server_ddl(server_url: str, statement: str) -> None:
    engine = create_async_engine(server_url, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as connection:
            await connection.execute(text(statement))
    finally:
        await engine.dispose()


@contextmanager
def scratch_database(backend: str, directory: Path, *, migrated: bool = False) -> Iterator[str]:
    """Yield the URL of an empty database of ``backend`` that is gone afterwards; with
    ``migrated``, one at the schema's head (SQLite and PostgreSQL: a copy of a template
    migrated once per test run)."""
    if backend == "sqlite":
        url = f"sqlite+aiosqlite:///{directory / 'gateway.db'}"
        if migrated:
            migrated_support.migrate(url)
        yield url
        return
    server_url = os.environ[SERVER_URLS[backend]]
    name = f"gwtest_{uuid.uuid4().hex[:12]}"
    template = ""
    if migrated and backend == "postgresql":
        template = f" TEMPLATE {_postgres_template(server_url)}"
    _run(_server_ddl(server_url, f"CREATE DATABASE {name}{template}"))
    try:
        url = make_url(server_url).set(database=name).render_as_string(hide_password=False)
        if migrated and not template:
            migrate.upgrade(url)
        yield url
    finally:
        force = " WITH (FORCE)" if backend == "postgresql" else ""
        _run(_server_ddl(server_url, f"DROP DATABASE IF EXISTS {name}{force}"))


_templates: dict[str, str] = {}


def _postgres_template(server_url: str) -> str:
    """A database migrated to head on this server, made once per test run and dropped at
    its end: CREATE DATABASE ... TEMPLATE copies it in a fraction of a migration's time."""
    if server_url not in _templates:
        name = f"gwtest_template_{uuid.uuid4().hex[:12]}"
        _run(_server_ddl(server_url, f"CREATE DATABASE {name}"))
        drop = f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"
        # At exit no event loop runs (and no new thread may start): asyncio.run directly.
        atexit.register(lambda: asyncio.run(_server_ddl(server_url, drop)))
        migrate.upgrade(make_url(server_url).set(database=name).render_as_string(False))
        _templates[server_url] = name
    return _templates[server_url]


@pytest.fixture(scope="module", params=BACKENDS)
def database_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A database migrated to head for the whole test module."""
    with scratch_database(request.param, tmp_path_factory.mktemp("db")) as url:
        migrate.upgrade(url)
        yield url
        migrate.downgrade(url)


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    """An engine on the module's database, every table emptied first."""
    engine = create_engine(database_url)
    async with engine.begin() as connection:
        for table in reversed(metadata.sorted_tables):
            await connection.execute(table.delete())
    yield engine
    await engine.dispose()
