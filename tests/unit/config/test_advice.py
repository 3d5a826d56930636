"""gateway check's warnings: per-process rate limits where several processes serve."""

from __future__ import annotations

from gateway.config.advice import config_warnings as warnings
from gateway.domain.settings import DatabaseSettings, GatewayConfig, RedisSettings, ServerSettings


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
