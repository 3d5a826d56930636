"""Fixtures shared by the unit and the integration tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway import logs
from tests.support.encodings import require_encodings


@pytest.fixture
def tiktoken_encodings() -> Path:
    """The folder of tiktoken's encodings (TIKTOKEN_CACHE_DIR); the test fails without it."""
    return require_encodings()


@pytest.fixture(autouse=True)
def _pytest_keeps_the_log_handlers(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI run in-process would replace the root handlers with the process's own (and
    later tests' lines would escape pytest's capture); it builds the config but does not
    apply it. A `gateway serve` subprocess, or a test marked real_logging, logs for real."""
    if request.node.get_closest_marker("real_logging") is None:
        monkeypatch.setattr(logs, "configure", logs.logging_config)
