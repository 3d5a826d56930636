"""gateway check's warnings: per-process rate limits where several processes serve."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.cli import main
from gateway.config.advice import config_warnings as warnings
from gateway.domain.settings import (
    DatabaseSettings,
    GatewayConfig,
    RedisSettings,
    ServerSettings,
    TelemetrySettings,
)


def test_one_process_on_sqlite_needs_no_redis() -> None:
    assert warnings(GatewayConfig()) == []


def test_several_workers_without_redis_warn() -> None:
    (line,) = warnings(GatewayConfig(server=ServerSettings(workers=4)))
    assert line.startswith("redis.url: ") and "server.workers is 4" in line


def test_a_shared_database_without_redis_warns_and_redis_silences_it() -> None:
    shared = DatabaseSettings(url="postgresql+asyncpg://db/gateway")
    (line,) = warnings(GatewayConfig(database=shared))
    assert "the database is shared" in line
    assert warnings(GatewayConfig(database=shared, redis=RedisSettings(url="redis://r"))) == []


def test_an_in_memory_database_notes_the_writer_runs_inline() -> None:
    memory = DatabaseSettings(url="sqlite+aiosqlite://")
    (line,) = warnings(GatewayConfig(database=memory))
    assert line.startswith("telemetry.writer: ") and "inline" in line
    inline = TelemetrySettings(writer="inline")
    assert warnings(GatewayConfig(database=memory, telemetry=inline)) == []


def test_gateway_check_prints_the_warning_and_still_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(
        "server: {workers: 2}\n"
        "providers: [{id: demo, adapter: echo}]\n"
        "models: [{id: m, provider: demo}]\n"
        "configurations: [{id: c, mode: fixed, model: m}]\n"
        "auth: {allowUnauthenticated: true}\n"
    )
    assert main(["check", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "warning: redis.url: not set while server.workers is 2" in out
    assert out.strip().endswith(": OK")
