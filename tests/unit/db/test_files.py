"""Which URLs name a SQLite file a read-only command must find before opening it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.db.files import missing_database, sqlite_file


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite+aiosqlite:///gateway.db", Path("gateway.db")),
        ("sqlite+aiosqlite:////var/lib/gateway/gateway.db", Path("/var/lib/gateway/gateway.db")),
        ("sqlite+aiosqlite://", None),
        ("sqlite+aiosqlite:///:memory:", None),
        ("sqlite+aiosqlite:///file:gw?mode=memory&cache=shared&uri=true", None),
        ("postgresql+asyncpg://gateway@db.internal:5432/gateway", None),
        ("mysql+aiomysql://gateway@db.internal:3306/gateway", None),
    ],
)
def test_sqlite_file_is_the_path_sqlite_would_open(url: str, path: Path | None) -> None:
    assert sqlite_file(url) == path


def test_an_existing_file_or_a_server_database_is_no_problem(tmp_path: Path) -> None:
    existing = tmp_path / "gateway.db"
    existing.touch()

    assert missing_database(f"sqlite+aiosqlite:///{existing}") is None
    assert missing_database("postgresql+asyncpg://gateway@db.internal:5432/gateway") is None


def test_a_relative_missing_file_is_named_with_the_folder_it_was_looked_for_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    problem = missing_database("sqlite+aiosqlite:///gateway.db")

    assert problem is not None
    assert problem.startswith(f"the SQLite database {tmp_path / 'gateway.db'} does not exist")
    assert f"a path relative to the current folder {tmp_path}" in problem
    assert not (tmp_path / "gateway.db").exists()
