"""Fixtures shared by the unit tests: the tiktoken files, or none."""

from __future__ import annotations

from pathlib import Path

import pytest

# The cl100k_base and o200k_base files, in tiktoken's cache layout (see its README).
SHARED_TIKTOKEN = Path("/work/shared/tiktoken")


@pytest.fixture
def shared_encodings(monkeypatch: pytest.MonkeyPatch) -> Path:
    if not (SHARED_TIKTOKEN / "9b5ad71b2ce5302211f9c61530b329a4922fc6a4").is_file():
        pytest.fail(f"tiktoken encodings missing under {SHARED_TIKTOKEN}")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(SHARED_TIKTOKEN))
    return SHARED_TIKTOKEN


@pytest.fixture
def no_encodings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    return tmp_path
