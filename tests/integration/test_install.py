"""The repository stands on its own: `alembic upgrade head` from its root, and a
non-editable install (a wheel in a fresh virtual environment) migrating from another
directory, on every dialect."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from gateway.db import migrate
from gateway.db.engine import create_engine
from tests.unit.db.scratch import BACKENDS, scratch_database

ROOT = Path(__file__).resolve().parents[2]
# What a wheel is built from: the rest of a checkout (tests, bench, .venv) is not shipped.
SOURCES = ("pyproject.toml", "setup.py", "README.md", "alembic", "gateway")


def _bare_environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GATEWAY_", "PYTHON"))}
    return {**env, **extra}


def _schema_version(url: str) -> list[str]:
    async def read() -> list[str]:
        engine = create_engine(url)
        try:
            async with engine.connect() as connection:
                rows = await connection.execute(text("SELECT version_num FROM alembic_version"))
                return [str(v) for v in rows.scalars().all()]
        finally:
            await engine.dispose()

    return asyncio.run(read())


@pytest.fixture(params=BACKENDS)
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with scratch_database(request.param, tmp_path) as url:
        yield url


def test_the_scripts_folder_cannot_shadow_the_alembic_library() -> None:
    assert not (ROOT / "alembic" / "__init__.py").exists()
    found = subprocess.run(
        [sys.executable, "-c", "import alembic.config; print(alembic.config.__file__)"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert Path(found.strip()).parent != ROOT / "alembic"


def test_alembic_upgrade_head_from_the_repository_root(empty_url: str) -> None:
    alembic = Path(sys.executable).with_name("alembic")
    command = [str(alembic)] if alembic.exists() else [sys.executable, "-m", "alembic"]
    env = _bare_environment(GATEWAY_DATABASE_URL=empty_url)
    up = subprocess.run(
        [*command, "upgrade", "head"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert up.returncode == 0, up.stderr
    assert _schema_version(empty_url) == [migrate.head_revision()]
    # -x url= is the other documented way, and `python -m alembic` puts the root on sys.path.
    down = subprocess.run(
        [sys.executable, "-m", "alembic", "-x", f"url={empty_url}", "downgrade", "base"],
        cwd=ROOT,
        env=_bare_environment(),
        capture_output=True,
        text=True,
    )
    assert down.returncode == 0, down.stderr
    assert _schema_version(empty_url) == []


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the gateway installed from a wheel, not editable.

    It borrows this environment's packages through a .pth file (offline, and no
    dependency is installed twice); the gateway itself is the one built here.
    """
    base = tmp_path_factory.mktemp("install")
    source = base / "source"
    for name in SOURCES:
        if (ROOT / name).is_dir():
            skip = shutil.ignore_patterns("__pycache__")
            shutil.copytree(ROOT / name, source / name, ignore=skip)
        else:
            source.mkdir(exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    borrowed = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(site, "borrowed-packages.pth").write_text("\n".join(sorted(borrowed)) + "\n")
    subprocess.run(
        [
            *(str(python), "-m", "pip", "install", "--quiet", "--no-index", "--no-deps"),
            *("--no-build-isolation", "--disable-pip-version-check", str(source)),
        ],
        cwd=base,
        env=_bare_environment(),
        capture_output=True,
        text=True,
        check=True,
    )
    shutil.rmtree(source)  # nothing may still point at the sources
    return venv


def test_the_wheel_carries_the_migrations_and_the_console_files(installed: Path) -> None:
    probe = (
        "import importlib.resources, gateway, gateway.db.migrate as m;"
        "print(gateway.__file__); print(m.MIGRATIONS_DIR);"
        "print(all(importlib.resources.files('gateway.api').joinpath('static', name).is_file()"
        " for name in ('console.css', 'console.js', 'icon.svg')))"
    )
    lines = subprocess.run(
        [str(installed / "bin" / "python"), "-c", probe],
        cwd=installed,
        env=_bare_environment(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert lines[0].startswith(str(installed)), lines
    assert Path(lines[1]) == Path(lines[0]).parent / "db" / "migrations"
    assert lines[2] == "True"


def test_gateway_db_upgrade_from_an_installed_wheel(
    installed: Path, empty_url: str, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    config = elsewhere / "gateway.yaml"
    config.write_text(
        f'database: {{url: "{empty_url}"}}\n'
        "auth: {allowUnauthenticated: true}\n"
        "providers: [{id: demo, adapter: echo}]\n"
        "models: [{id: m, provider: demo}]\n"
        "configurations: [{id: c, mode: fixed, model: m}]\n"
    )
    result = subprocess.run(
        [str(installed / "bin" / "gateway"), "db", "upgrade", "--config", config.name],
        cwd=elsewhere,
        env=_bare_environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert _schema_version(empty_url) == [migrate.head_revision()]
    migrate.downgrade(empty_url)
