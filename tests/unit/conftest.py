"""Fixtures shared by the unit tests: a tiktoken cache folder that holds no encodings."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def no_encodings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    return tmp_path
