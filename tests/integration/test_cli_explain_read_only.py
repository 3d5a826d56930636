"""`gateway explain` only reads: a database that is not at this gateway's schema is
reported with what to do, never migrated (on SQLite, PostgreSQL and MariaDB)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import inspect

from gateway.cli import main as gateway_main
from gateway.db import migrate
from gateway.db.engine import create_engine
from tests.support.gateway import ENVIRON
from tests.support.routed import routed_yaml
from tests.unit.db.scratch import BACKENDS, scratch_database

MODELS = "  - {id: a, provider: p-a, name: model-a, capabilities: [chat]}"
CONFIGURATIONS = "  - {id: routed, mode: criteria, criteria: {capabilities: [chat]}}"


@pytest.fixture(params=BACKENDS)
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with scratch_database(request.param, tmp_path) as url:
        yield url


def _explain(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    for name, value in ENVIRON.items():
        monkeypatch.setenv(name, value)
    text = routed_yaml(
        "http://127.0.0.1:9", url, models=MODELS, configurations=CONFIGURATIONS, providers=["p-a"]
    )
    config_file = tmp_path / "gateway.yaml"
    config_file.write_text(text, encoding="utf-8")
    code = gateway_main(["explain", "routed", "--operation", "chat", "--config", str(config_file)])
    return code, capsys.readouterr().err


def _tables_and_revision(url: str) -> tuple[set[str], str | None]:
    async def read() -> tuple[set[str], str | None]:
        engine = create_engine(url)
        try:
            async with engine.connect() as connection:
                tables = await connection.run_sync(
                    lambda sync: set(inspect(sync).get_table_names())
                )
            return tables, await migrate.schema_revision(engine)
        finally:
            await engine.dispose()

    return asyncio.run(read())


def test_explain_against_a_never_migrated_database_says_so_and_creates_nothing(
    database: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, err = _explain(database, tmp_path, monkeypatch, capsys)
    assert code == 1
    assert "the database has no gateway schema yet: run `gateway db upgrade`" in err
    assert _tables_and_revision(database) == (set(), None)


def test_explain_against_an_older_schema_does_not_upgrade_it(
    database: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    migrate.upgrade(database, "0001")
    tables_before, _ = _tables_and_revision(database)
    code, err = _explain(database, tmp_path, monkeypatch, capsys)
    assert code == 1
    head = migrate.head_revision()
    assert f"the database schema is at revision 0001, this gateway's at {head}" in err
    assert "gateway db upgrade" in err
    assert _tables_and_revision(database) == (tables_before, "0001")
    migrate.downgrade(database)  # the scratch database is dropped empty


def test_explain_against_a_migrated_database_answers(
    database: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    migrate.upgrade(database)
    code, err = _explain(database, tmp_path, monkeypatch, capsys)
    assert code == 0, err
    migrate.downgrade(database)
