"""Integration fixtures: a fake upstream and the real gateway, both on loopback."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_upstream import FakeUpstream

SHARED_TIKTOKEN = Path(__file__).resolve().parents[3] / "shared" / "tiktoken"


@pytest.fixture(scope="session", autouse=True)
def _tiktoken_cache() -> None:
    if "TIKTOKEN_CACHE_DIR" not in os.environ and SHARED_TIKTOKEN.is_dir():
        os.environ["TIKTOKEN_CACHE_DIR"] = str(SHARED_TIKTOKEN)


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeUpstream]:
    fake = FakeUpstream()
    yield fake
    fake.close()


@pytest.fixture(autouse=True)
def _fresh_upstream(request: pytest.FixtureRequest) -> None:
    if "upstream" in request.fixturenames:
        request.getfixturevalue("upstream").reset()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}"
