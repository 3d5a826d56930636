"""The soft open-file limit ``gateway serve`` asks for, and uvicorn's options."""

from __future__ import annotations

import logging
import pickle
import resource
import subprocess
import sys

import pytest

from gateway.api.serving import (
    OPEN_FILES_CEILING,
    log_open_file_limit,
    target_open_files,
    uvicorn_options,
)
from gateway.domain.settings import ServerSettings

UNLIMITED = -1


def test_the_soft_limit_rises_to_the_hard_limit() -> None:
    assert target_open_files(1024, 524288, UNLIMITED) == 524288


def test_an_unlimited_or_huge_hard_limit_is_capped() -> None:
    assert target_open_files(1024, UNLIMITED, UNLIMITED) == OPEN_FILES_CEILING
    assert target_open_files(1024, 1 << 30, UNLIMITED) == OPEN_FILES_CEILING


def test_the_soft_limit_never_drops() -> None:
    assert target_open_files(1 << 21, 1 << 22, UNLIMITED) == 1 << 21
    assert target_open_files(UNLIMITED, UNLIMITED, UNLIMITED) == UNLIMITED


def test_raising_the_limit_changes_the_process_limit() -> None:
    code = (
        "import resource\n"
        "from gateway.api.serving import raise_open_file_limit\n"
        "print(resource.getrlimit(resource.RLIMIT_NOFILE)[0], raise_open_file_limit()[0],"
        " resource.getrlimit(resource.RLIMIT_NOFILE)[0])\n"
    )
    result = subprocess.run(
        ["sh", "-c", 'ulimit -Sn 200 && exec "$@"', "sh", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
    )
    before, reported, after = map(int, result.stdout.split())
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert before == 200
    assert reported == after == target_open_files(200, hard, resource.RLIM_INFINITY) > 200


def test_the_uvicorn_options_pickle_for_worker_processes() -> None:
    options = uvicorn_options(ServerSettings(max_connections=7))
    restored = pickle.loads(pickle.dumps(options))
    assert restored["http"].keywords["limits"].max_connections == 7
    assert restored["ws"] == "none"


def test_a_limit_below_what_max_connections_needs_is_warned_about(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="gateway.api.serving")
    log_open_file_limit((1024, 1024), ServerSettings(max_connections=2048))
    log_open_file_limit((1 << 20, 1 << 20), ServerSettings(max_connections=2048))
    messages = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert messages[0] == ("INFO", "open-file limit: 1024 (hard limit 1024)")
    assert messages[1][0] == "WARNING" and "server.maxConnections 2048" in messages[1][1]
    assert [level for level, _ in messages[2:]] == ["INFO"]
