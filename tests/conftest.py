"""Fixtures shared by the unit and the integration tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.encodings import require_encodings


@pytest.fixture
def tiktoken_encodings() -> Path:
    """The folder of tiktoken's encodings (TIKTOKEN_CACHE_DIR); the test fails without it."""
    return require_encodings()
