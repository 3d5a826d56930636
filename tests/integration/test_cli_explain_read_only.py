"""`gateway explain` only reads: a database that is not at this gateway's schema is
reported with what to do, never migrated (on SQLite, PostgreSQL and MariaDB), and a SQLite
file that does not exist is reported, never created (a relative path, run from another folder).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import inspect

from gateway.cli import main as gateway_main
from gateway.db import migrate
from gateway.db.engine import create_engine
from gateway.db.files import sqlite_file
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
    sqlite_path = sqlite_file(database)
    if sqlite_path is not None:  # an empty SQLite database (a missing file: the tests below)
        sqlite_path.touch()
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


def _explain_from(folder: Path, config_file: Path) -> subprocess.CompletedProcess[str]:
    """``gateway explain`` as a user runs it: a process of its own, started in ``folder``."""
    root = Path(__file__).resolve().parents[2]
    return subprocess.run(
        [
            *(sys.executable, "-m", "gateway.cli", "explain", "routed"),
            *("--operation", "chat", "--config", str(config_file)),
        ],
        cwd=folder,
        capture_output=True,
        text=True,
        env={**os.environ, **ENVIRON, "PYTHONPATH": str(root)},
        check=False,
        timeout=60,
    )


def _relative_sqlite_config(tmp_path: Path) -> Path:
    text = routed_yaml(
        "http://127.0.0.1:9",
        "sqlite+aiosqlite:///gateway.db",
        models=MODELS,
        configurations=CONFIGURATIONS,
        providers=["p-a"],
    )
    config_file = tmp_path / "server" / "gateway.yaml"
    config_file.parent.mkdir()
    config_file.write_text(text, encoding="utf-8")
    return config_file


def test_explain_from_another_folder_creates_no_sqlite_file_and_says_where_it_looked(
    tmp_path: Path,
) -> None:
    config_file = _relative_sqlite_config(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    done = _explain_from(elsewhere, config_file)

    assert done.returncode == 1
    assert list(elsewhere.iterdir()) == []
    assert list(config_file.parent.iterdir()) == [config_file]
    assert done.stderr.strip() == (
        f"error: the SQLite database {elsewhere / 'gateway.db'} does not exist (database.url "
        f"names 'gateway.db', a path relative to the current folder {elsewhere}): run the "
        "command from the folder the server runs in, give database.url an absolute path, or "
        "create the database with `gateway db upgrade` (explain only reads)"
    )


def test_explain_from_the_server_folder_reads_the_relative_sqlite_file(tmp_path: Path) -> None:
    config_file = _relative_sqlite_config(tmp_path)
    folder = config_file.parent
    migrate.upgrade(f"sqlite+aiosqlite:///{folder / 'gateway.db'}")

    done = _explain_from(folder, config_file)

    assert done.returncode == 0, done.stderr
    assert "routed" in done.stdout


def test_explain_of_an_absolute_sqlite_path_that_does_not_exist_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "data" / "gateway.db"
    (tmp_path / "data").mkdir()

    code, err = _explain(f"sqlite+aiosqlite:///{missing}", tmp_path, monkeypatch, capsys)

    assert code == 1
    assert f"error: the SQLite database {missing} does not exist (database.url names" in err
    assert "relative" not in err
    assert not missing.exists()
