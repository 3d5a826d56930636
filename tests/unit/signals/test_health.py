"""Provider health samples (docs/routing.md#health)."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.domain import HealthSample
from gateway.signals.health import read_health
from gateway.telemetry.records import TelemetryRecord
from gateway.telemetry.writer import TelemetryWriter
from tests.unit.telemetry.factory import NOW, make_record

WINDOW = 900


async def _write(engine: AsyncEngine, records: list[TelemetryRecord]) -> None:
    writer = TelemetryWriter(engine)
    for record in records:
        writer.submit(record)
    await writer.flush()


def _failed(error_class: str, **fields: object) -> TelemetryRecord:
    return make_record(
        success=False, error_class=error_class, served_provider=None, served_model=None, **fields
    )


async def test_ten_calls_nine_ok_at_200_ms_give_the_pinned_sample(engine: AsyncEngine) -> None:
    records = [make_record(latency_ms=200.0) for _ in range(9)]
    records.append(_failed("upstream_5xx", latency_ms=200.0))
    await _write(engine, records)
    health = await read_health(engine, WINDOW, NOW)
    assert health == {"openai-main": HealthSample(samples=10, successes=9, avg_latency_ms=200.0)}


async def test_caller_faults_and_cache_hits_are_left_out(engine: AsyncEngine) -> None:
    await _write(
        engine,
        [
            make_record(),
            _failed("upstream_4xx"),
            _failed("client_disconnected"),
            make_record(cache_hit=True),
            _failed("upstream_429"),  # the provider's fault: counts
            _failed("upstream_timeout"),
            _failed("upstream_auth"),  # the gateway's key refused: the provider is unusable
        ],
    )
    sample = (await read_health(engine, WINDOW, NOW))["openai-main"]
    assert (sample.samples, sample.successes) == (4, 1)


async def test_a_run_rescued_by_a_fallback_is_a_failure_of_the_first_provider(
    engine: AsyncEngine,
) -> None:
    await _write(
        engine,
        [
            make_record(latency_ms=100.0),
            make_record(
                latency_ms=5000.0,
                fallback_attempts=1,
                served_provider="backup",
                served_model="backup-model",
            ),
        ],
    )
    health = await read_health(engine, WINDOW, NOW)
    assert health == {"openai-main": HealthSample(samples=2, successes=1, avg_latency_ms=100.0)}


async def test_latency_is_null_without_first_attempt_rows(engine: AsyncEngine) -> None:
    await _write(engine, [make_record(fallback_attempts=1), make_record(fallback_attempts=2)])
    sample = (await read_health(engine, WINDOW, NOW))["openai-main"]
    assert sample == HealthSample(samples=2, successes=0, avg_latency_ms=None)


async def test_rows_outside_the_window_or_without_a_provider_are_left_out(
    engine: AsyncEngine,
) -> None:
    await _write(
        engine,
        [
            make_record(created_at=NOW - timedelta(seconds=WINDOW + 1)),
            _failed("budget_exceeded", provider=None, model=None, adapter_type=None),
            make_record(provider="local", created_at=NOW - timedelta(seconds=WINDOW)),
        ],
    )
    assert await read_health(engine, WINDOW, NOW) == {
        "local": HealthSample(samples=1, successes=1, avg_latency_ms=100.0)
    }
