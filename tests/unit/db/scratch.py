"""Scratch databases for the database tests: SQLite always, PostgreSQL and MariaDB when
GATEWAY_TEST_POSTGRES_URL / GATEWAY_TEST_MARIADB_URL are set.

The servers are shared, so every test module gets its own freshly created
database (``gwtest_<random>``), migrated to head, downgraded to base and
dropped at the end. The URLs' users must be allowed to create databases.
"""

from __future__ import annotations

import asyncio
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
def scratch_database(backend: str, directory: Path) -> Iterator[str]:
    """Yield the URL of an empty database of ``backend`` that is gone afterwards."""
    if backend == "sqlite":
        yield f"sqlite+aiosqlite:///{directory / 'gateway.db'}"
        return
    server_url = os.environ[SERVER_URLS[backend]]
    name = f"gwtest_{uuid.uuid4().hex[:12]}"
    _run(_server_ddl(server_url, f"CREATE DATABASE {name}"))
    try:
        url = make_url(server_url).set(database=name)
        yield url.render_as_string(hide_password=False)
    finally:
        force = " WITH (FORCE)" if backend == "postgresql" else ""
        _run(_server_ddl(server_url, f"DROP DATABASE IF EXISTS {name}{force}"))


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
