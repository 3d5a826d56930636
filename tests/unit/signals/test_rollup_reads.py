"""The rollup-based reads equal the row-based ones (docs/telemetry.md#telemetry_hourly).

Random calls over eight days, written through the telemetry writer (which keeps the
rollup's hours and days), are read back both ways, at several moments inside an hour,
for every statistic and stream measure: the 7-day windows take six whole days from the
day level, 23 hours from the hour level and the rest from the rows. Then again after
retention purges whose cutoff falls inside a day. On every database.
"""

from __future__ import annotations

import math
import random
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.rollup_tables import (
    BUCKET_COLUMNS,
    telemetry_daily,
    telemetry_daily_histogram,
    telemetry_hourly,
    telemetry_hourly_histogram,
    telemetry_hourly_latency,
)
from gateway.db.tables import telemetry
from gateway.domain import HealthSample, HistoryFigures
from gateway.signals.health import read_health
from gateway.signals.history import read_call_history
from gateway.telemetry.records import TelemetryRecord
from gateway.telemetry.retention import Retention
from gateway.telemetry.writer import TelemetryWriter, WriterSettings
from tests.unit.telemetry.factory import NOW, make_record

PROVIDERS = ("p-a", "p-b", "p-c")
MODELS = ("m-1", "m-2", "m-3", "m-4")
ERRORS = ("upstream_5xx", "upstream_4xx", "client_disconnected", "upstream_timeout")


def random_records(rng: random.Random, count: int) -> list[TelemetryRecord]:
    records = []
    for index in range(count):
        attempted = rng.choice(PROVIDERS)
        fallback = 1 if rng.random() < 0.08 else 0
        served = rng.choice(PROVIDERS) if fallback else attempted
        success = rng.random() > 0.15
        cache_hit = success and rng.random() < 0.05
        operation = rng.choice(("chat", "stream", "tools"))
        latency = rng.lognormvariate(6.0, 1.2)
        ttft = latency * rng.uniform(0.05, 0.9) if operation == "stream" else latency
        if rng.random() < 0.05:
            ttft = None
        answered = success or rng.random() < 0.3
        # A fifth of the calls in the last two hours (and 75 minutes ahead of NOW).
        back = rng.uniform(-4500, 7200) if rng.random() < 0.2 else rng.uniform(-1800, 8 * 86400)
        records.append(
            make_record(
                request_id=f"r{index}",
                created_at=NOW - timedelta(seconds=back),
                api_key_id=rng.choice(("alice", "bob", None)),
                configuration=rng.choice(("smart", "cheap")),
                operation=operation,
                provider=None if cache_hit else attempted,
                served_provider=served if answered else None,
                served_model=rng.choice(MODELS) if answered else None,
                success=success,
                error_class=None if success else rng.choice(ERRORS),
                cache_hit=cache_hit,
                fallback_attempts=fallback,
                latency_ms=latency,
                time_to_first_token_ms=ttft if success else None,
                actual_cost=None
                if rng.random() < 0.2
                else Decimal(rng.randint(1, 10**7)) / Decimal(10**10),
                actual_input_tokens=rng.randint(1, 5000),
                actual_output_tokens=rng.randint(0, 900),
                routing_policy_mode=rng.choice(("", "balanced")),
            )
        )
    return records


async def _write(engine: AsyncEngine, records: list[TelemetryRecord]) -> None:
    writer = TelemetryWriter(engine, WriterSettings(batch_size=97))
    for record in records:
        writer.submit(record)
    await writer.flush()


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def _same_history(
    dialect: str, rolled: dict[object, HistoryFigures], rows: dict[object, HistoryFigures]
) -> None:
    assert rolled.keys() == rows.keys()
    for key, figures in rows.items():
        other = rolled[key]
        assert (other.calls, other.costed_calls) == (figures.calls, figures.costed_calls), key
        assert (other.statistic, other.measure) == (figures.statistic, figures.measure)
        assert _close(other.mean_latency_ms, figures.mean_latency_ms), key
        assert _close(other.total_ms, figures.total_ms), key
        assert _close(other.ttft_ms, figures.ttft_ms), key
        if dialect == "sqlite":  # NUMERIC is a double there (docs/telemetry.md)
            assert (other.mean_cost is None) == (figures.mean_cost is None)
            if figures.mean_cost is not None and other.mean_cost is not None:
                assert abs(other.mean_cost - figures.mean_cost) < Decimal("1e-12")
        else:
            assert other.mean_cost == figures.mean_cost, key


def _same_health(rolled: dict[str, HealthSample], rows: dict[str, HealthSample]) -> None:
    assert rolled.keys() == rows.keys()
    for provider, sample in rows.items():
        other = rolled[provider]
        assert (other.samples, other.successes) == (sample.samples, sample.successes)
        assert _close(other.avg_latency_ms, sample.avg_latency_ms)


# NOW is noon: 7-day windows from these moments read 11 or 12 hours before the first
# midnight from the hour level; from 04:28:57 (19 hours) their histograms are read as
# that day minus its first 5 hours. Their histograms take the first hour's rows from
# the rows (12:43:11, 12:59:59) or as the whole hour minus the rows before the window
# (12:17:03, 04:28:57; gateway.signals.window.counting_parts).
MOMENTS = (
    timedelta(0),
    timedelta(minutes=17, seconds=3),
    timedelta(minutes=43, seconds=11),
    timedelta(minutes=59, seconds=59),
    -timedelta(hours=7, minutes=31, seconds=3),
)


async def _compare_everything(engine: AsyncEngine) -> int:
    dialect = engine.dialect.name
    compared = 0
    for offset in MOMENTS:
        now = NOW + offset
        for statistic in ("mean", "p50", "p90"):
            for measure in ("ttft", "total"):
                kwargs = {"statistic": statistic, "stream_latency": measure}
                rolled = await read_call_history(engine, 7, now, **kwargs)  # type: ignore[arg-type]
                rows = await read_call_history(
                    engine,
                    7,
                    now,
                    use_rollup=False,
                    **kwargs,  # type: ignore[arg-type]
                )
                assert rows, "the random data must fill the window"
                _same_history(dialect, rolled, rows)
                compared += len(rows)
        for window in (900, 3 * 3600 + 600, 2 * 86400):
            rolled_health = await read_health(engine, window, now)
            rows_health = await read_health(engine, window, now, use_rollup=False)
            assert rows_health
            _same_health(rolled_health, rows_health)
    return compared


@pytest.mark.parametrize("seed", [1, 2])
async def test_rollup_reads_equal_row_reads_on_random_calls(engine: AsyncEngine, seed: int) -> None:
    await _write(engine, random_records(random.Random(seed), 1500))
    assert await _compare_everything(engine) > 0


async def _total(engine: AsyncEngine, column: Any) -> int:
    async with engine.connect() as connection:
        return int((await connection.execute(select(func.sum(column)))).scalar() or 0)


async def test_the_rollup_sums_every_row(engine: AsyncEngine) -> None:
    records = random_records(random.Random(3), 400)
    await _write(engine, records)
    async with engine.connect() as connection:
        rows = (await connection.execute(select(func.count()).select_from(telemetry))).scalar()
    assert await _total(engine, telemetry_hourly.c.calls) == rows == len(records)
    assert await _total(engine, telemetry_daily.c.calls) == len(records)
    latency = await _total(engine, telemetry_hourly_latency.c.calls)
    assert latency > 0
    for table in (telemetry_hourly_histogram, telemetry_daily_histogram):
        assert await _total(engine, table.c.calls) == latency
        assert sum([await _total(engine, table.c[name]) for name in BUCKET_COLUMNS]) == latency


async def test_after_a_purge_rollup_reads_still_equal_row_reads(engine: AsyncEngine) -> None:
    await _write(engine, random_records(random.Random(4), 1200))
    # Retention of 7 days, purged at NOW + 37 minutes: the cutoff falls inside the window.
    retention = Retention(engine, 7, clock=lambda: NOW + timedelta(days=1, minutes=37))
    assert await retention.purge_now() > 0
    async with engine.connect() as connection:
        oldest_row = (await connection.execute(select(func.min(telemetry.c.created_at)))).scalar()
        oldest_hour = (await connection.execute(select(func.min(telemetry_hourly.c.hour)))).scalar()
        oldest_bucket = (
            await connection.execute(select(func.min(telemetry_hourly_latency.c.hour)))
        ).scalar()
    cutoff = NOW - timedelta(days=6)  # NOW + 1 day 37 min - 7 days, down to its hour
    assert oldest_row is not None and oldest_row >= cutoff
    assert oldest_hour == oldest_bucket == cutoff
    assert await _compare_everything(engine) > 0
    # An hour later the next purge takes one more hour out of the same day, only that one.
    later = Retention(engine, 7, clock=lambda: NOW + timedelta(days=1, hours=1, minutes=2))
    assert await later.purge_now() > 0
    async with engine.connect() as connection:
        oldest_day = (await connection.execute(select(func.min(telemetry_daily.c.day)))).scalar()
    assert oldest_day == cutoff.replace(hour=0)
    assert await _compare_everything(engine) > 0
    for hourly, daily in (
        (telemetry_hourly, telemetry_daily),
        (telemetry_hourly_histogram, telemetry_daily_histogram),
    ):
        assert await _total(engine, daily.c.calls) == await _total(engine, hourly.c.calls)
