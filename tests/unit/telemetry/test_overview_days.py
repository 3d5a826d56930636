"""The Overview's memory of settled days (gateway.telemetry.overview.SettledDays): the same
figures as a read of every rollup hour; today and a day still settling are always read
again; a row written late into a settled day shows once its day is due again. On every
database."""

from __future__ import annotations

from datetime import date, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.telemetry.overview import (
    REREAD_PER_READ,
    REREAD_SECONDS,
    RollupFigures,
    SettledDays,
    read_rollup,
    start_of,
)
from gateway.telemetry.records import TelemetryRecord
from gateway.telemetry.writer import TelemetryWriter, WriterSettings
from tests.unit.telemetry.factory import NOW, make_record

FIRST = NOW.date() - timedelta(days=6)  # a 7-day range: six settled days and today


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _calls(moment: datetime, count: int, *, stream: bool = False) -> list[TelemetryRecord]:
    return [
        make_record(
            created_at=moment + timedelta(seconds=n),
            operation="stream" if stream else "chat",
            latency_ms=50.0 + 7 * n,
            time_to_first_token_ms=20.0 + n,
            success=n % 5 != 0,
            cache_hit=n % 7 == 0,
            fallback_attempts=1 if n % 9 == 0 else 0,
        )
        for n in range(count)
    ]


async def _write(engine: AsyncEngine, records: list[TelemetryRecord]) -> None:
    writer = TelemetryWriter(engine, WriterSettings(batch_size=50))
    for record in records:
        writer.submit(record)
    await writer.flush()


async def _both(
    engine: AsyncEngine, days: SettledDays, now: datetime, first: date = FIRST
) -> tuple[RollupFigures, RollupFigures]:
    async with engine.connect() as connection:
        remembered = await days.figures(connection, first, now)
        read = await read_rollup(connection, start_of(first))
    return remembered, read


async def test_settled_days_add_up_to_the_rollup_and_late_rows_show_when_due(
    engine: AsyncEngine,
) -> None:
    records = []
    for back in range(9):  # two days before the range too
        records += _calls(NOW - timedelta(days=back, hours=3), 30 + back, stream=back % 2 == 1)
    await _write(engine, records)
    clock = Clock()
    days = SettledDays(clock)
    remembered, read = await _both(engine, days, NOW)
    assert remembered == read and read.calls == sum(30 + back for back in range(7))
    assert read.errors and read.cache_hits and read.fallbacks and read.streams and read.ttft

    # Today is read again every time; a settled day is not, until it is due.
    await _write(engine, _calls(NOW - timedelta(minutes=5), 3) + _calls(NOW - timedelta(days=2), 4))
    remembered, read = await _both(engine, days, NOW)
    assert read.calls == remembered.calls + 4

    clock.now += REREAD_SECONDS
    settled = 6
    for _ in range(-(-settled // REREAD_PER_READ)):  # every due day within these reads
        remembered, read = await _both(engine, days, NOW)
    assert remembered == read


async def test_yesterday_is_read_again_until_it_settles(engine: AsyncEngine) -> None:
    midnight = start_of(NOW.date())
    now = midnight + timedelta(minutes=20)
    await _write(engine, _calls(midnight - timedelta(hours=2), 10))
    days = SettledDays(Clock())
    first = now.date() - timedelta(days=6)
    remembered, read = await _both(engine, days, now, first)
    assert remembered == read and read.calls == 10
    await _write(engine, _calls(midnight - timedelta(minutes=10), 2))  # a late stream's row
    remembered, read = await _both(engine, days, now, first)
    assert remembered == read and read.calls == 12
