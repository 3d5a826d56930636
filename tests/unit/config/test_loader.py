"""The loader's entry points: files, check_config, and ConfigError's text."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config.errors import ConfigError
from gateway.config.loader import check_config, load_config

from .support import MINIMAL, load


def test_load_config_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(MINIMAL + "server: {port: ${PORT}}\n", encoding="utf-8")

    assert load_config(path, {"PORT": "5000"}).server.port == 5000
    assert load_config(str(path), {"PORT": "5001"}).server.port == 5001


def test_load_config_reads_the_process_environment_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(MINIMAL + "database: {url: '${GW_TEST_DB_URL}'}\n", encoding="utf-8")
    monkeypatch.setenv("GW_TEST_DB_URL", "sqlite+aiosqlite:///x.db")

    assert load_config(path).database.url == "sqlite+aiosqlite:///x.db"


def test_check_config_is_empty_for_a_good_file(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(MINIMAL, encoding="utf-8")

    assert check_config(path) == []


def test_check_config_lists_every_problem(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(MINIMAL + "server: {port: -1, workers: 0}\n", encoding="utf-8")

    assert check_config(path) == ["server.port: must be >= 0", "server.workers: must be >= 1"]


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"

    assert check_config(missing) == ["cannot read the file: No such file or directory"]


def test_syntax_error_leaves_the_file_to_whoever_prints_it(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("server: {port: 1\n", encoding="utf-8")

    (problem,) = check_config(path)
    assert problem.startswith("server.port: invalid YAML at line 2, column 1: ")
    assert str(path) not in problem


def test_config_error_text_lists_all_problems() -> None:
    error = ConfigError(["a.b: one", "c[0]: two"])

    assert error.problems == ["a.b: one", "c[0]: two"]
    assert str(error) == "invalid configuration (2 problems):\n  a.b: one\n  c[0]: two"


def test_an_empty_top_level_section_means_its_defaults() -> None:
    config = load(
        """
        server:
        auth:
          # nothing but a comment: YAML reads the section as null
        providers: [{id: demo, adapter: echo}]
        models: [{id: m1, provider: demo}]
        """
    )

    assert config.server.port == 4000
    assert config.auth.keys == () and config.auth.allow_unauthenticated is False
