"""Three replicas started at once on a fresh database (docs/operations.md, "Upgrading and
migrations"): the schema migration takes a database lock, so two wait for the first and
then serve, and the schema is at head once. Real ``gateway serve`` processes, each on a
freshly created database of SQLite, PostgreSQL and MariaDB, dropped afterwards.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
from sqlalchemy import text

from gateway.db.engine import create_engine
from gateway.db.migrate import head_revision
from tests.integration.budget_support import HTTP_BACKENDS
from tests.support.process import free_port, serving_together
from tests.unit.db.scratch import scratch_database

REPLICAS = 3


@pytest.fixture(params=HTTP_BACKENDS)
def fresh_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with scratch_database(request.param, tmp_path) as url:  # empty: never migrated
        yield url


def _config(directory: Path, url: str) -> Path:
    config = directory / "gateway.yaml"
    config.write_text(
        f'database: {{url: "{url}"}}\n'
        "auth: {allowUnauthenticated: true}\n"
        "providers: [{id: demo, adapter: echo}]\n"
        "models: [{id: m, provider: demo, capabilities: [chat]}]\n"
        "configurations: [{id: chat, mode: fixed, model: m}]\n"
    )
    return config


async def _versions(url: str) -> list[str]:
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            rows = await connection.execute(text("SELECT version_num FROM alembic_version"))
            return [row[0] for row in rows]
    finally:
        await engine.dispose()


def test_three_replicas_started_at_once_on_a_fresh_database_all_serve(
    fresh_url: str, tmp_path: Path
) -> None:
    config = _config(tmp_path, fresh_url)
    ports = [free_port() for _ in range(REPLICAS)]
    args = [["--port", str(port)] for port in ports]
    with serving_together(config, args, ports=ports) as replicas:
        for served in replicas:
            assert httpx.get(f"{served.base}/readyz", timeout=10).status_code == 200
            client = openai.OpenAI(base_url=f"{served.base}/v1", api_key="-", max_retries=0)
            answer = client.chat.completions.create(
                model="chat", messages=[{"role": "user", "content": "hi"}]
            )
            assert answer.choices[0].message.content
        assert asyncio.run(_versions(fresh_url)) == [head_revision()]
    for served in replicas:
        printed = served.stop()
        assert served.process.returncode is not None
        assert "Traceback" not in printed, printed
        assert "UniqueViolation" not in printed and "Duplicate" not in printed, printed
