"""Telemetry retention: rows older than ``telemetry.retentionDays`` are deleted, by whole hours.

The cutoff is rounded down to the start of its UTC hour, and the rows and the
rollup of the hours before it go in one transaction: the rollup always sums
exactly the rows that are still there (docs/telemetry.md#telemetry_hourly), so
reads that take whole hours and days from the rollup and the rest from the rows
agree with reads of the rows alone. The days before the cutoff's day go whole;
the cutoff's own day loses what its deleted hours held (their hourly rows are
subtracted from it before they go), and a day row left with no calls goes.
``usage_daily`` is kept: it is the aggregate budgets and monthly reports read,
and it holds no per-call detail. The keys of written batches (``telemetry_batches``) go
after ``BATCH_KEY_DAYS``: a batch is only ever sent again within minutes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from sqlalchemy import Table, bindparam, func, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from gateway.db.engine import describe_error
from gateway.db.rollup_tables import (
    HISTOGRAM_COUNTERS,
    HOURLY_COUNTERS,
    HOURLY_HISTOGRAM_KEY,
    HOURLY_KEY_COLUMNS,
    telemetry_daily,
    telemetry_daily_histogram,
    telemetry_hourly,
    telemetry_hourly_histogram,
    telemetry_hourly_latency,
)
from gateway.db.tables import telemetry, telemetry_batches
from gateway.domain.clock import utc_now
from gateway.tasks import Supervisor, cancel_and_wait
from gateway.telemetry.rollup import hour_of
from gateway.telemetry.rollup_levels import day_of

log = logging.getLogger(__name__)
PURGE_INTERVAL_SECONDS = 3600.0
BATCH_KEY_DAYS = 1

# (hourly table, its day table, the key after the period, the counters)
_LEVELS: tuple[tuple[Table, Table, Sequence[str], Sequence[str]], ...] = (
    (telemetry_hourly, telemetry_daily, HOURLY_KEY_COLUMNS[1:], HOURLY_COUNTERS),
    (
        telemetry_hourly_histogram,
        telemetry_daily_histogram,
        HOURLY_HISTOGRAM_KEY[1:],
        HISTOGRAM_COUNTERS,
    ),
)


class Retention:
    """Deletes what is past ``retention_days``: once at start, then every hour."""

    def __init__(
        self,
        engine: AsyncEngine,
        retention_days: int,
        *,
        interval: float = PURGE_INTERVAL_SECONDS,
        clock: Callable[[], datetime] = utc_now,
        tasks: Supervisor | None = None,
    ) -> None:
        self._tasks = tasks or Supervisor()
        self._engine = engine
        self._days = retention_days
        self._interval = interval
        self._clock = clock
        self._task: asyncio.Task[None] | None = None
        self.purged = 0  # telemetry rows deleted by this process

    async def start(self) -> None:
        if self._task is None:
            self._task = self._tasks.spawn("telemetry-purge", self._loop)

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)

    async def purge_now(self) -> int:
        """Delete rows past retention once; returns how many went."""
        now = self._clock()
        count = await purge_telemetry(self._engine, retention_cutoff(now, self._days))
        await purge_batch_keys(self._engine, now - timedelta(days=BATCH_KEY_DAYS))
        self.purged += count
        return count

    async def _loop(self) -> None:
        while True:
            try:
                await self.purge_now()
            except Exception as exc:  # retried at the next interval
                log.warning("telemetry: retention purge failed (%s)", describe_error(exc))
            await asyncio.sleep(self._interval)


def retention_cutoff(now: datetime, retention_days: int) -> datetime:
    """The start of the UTC hour ``retention_days`` before ``now``: rows before it go."""
    return hour_of(now - timedelta(days=retention_days))


async def _subtract_hours(
    connection: AsyncConnection,
    levels: tuple[Table, Table, Sequence[str], Sequence[str]],
    day: datetime,
    before: datetime,
) -> None:
    """Take the hours ``[day, before)`` out of ``day``'s rows (before the hours are deleted)."""
    hourly, daily, key, counters = levels
    h, d = hourly.c, daily.c
    rows = (
        await connection.execute(
            select(*(h[name] for name in key), *(func.sum(h[name]) for name in counters))
            .where(h.hour >= day, h.hour < before)
            .group_by(*(h[name] for name in key))
        )
    ).all()
    if rows:
        statement = (
            update(daily)
            .where(
                d.day == bindparam("k_day"), *(d[name] == bindparam(f"k_{name}") for name in key)
            )
            .values(
                {name: d[name] - bindparam(f"v_{name}", type_=d[name].type) for name in counters}
            )
        )
        params = [
            {
                "k_day": day,
                **{f"k_{name}": value for name, value in zip(key, row[: len(key)], strict=True)},
                **{
                    f"v_{name}": value
                    for name, value in zip(counters, row[len(key) :], strict=True)
                },
            }
            for row in rows
        ]
        await connection.execute(statement, params)
    await connection.execute(daily.delete().where(d.day == day, d.calls == 0))


async def purge_telemetry(engine: AsyncEngine, before: datetime) -> int:
    """Delete telemetry rows and rollup hours before ``before`` (an hour's start), and the
    rollup days before its day; returns how many telemetry rows went.

    Runs hourly, so each purge removes about an hour of rows and the range
    delete on ``created_at`` (indexed) stays short.
    """
    before = hour_of(before)
    day = day_of(before)
    async with engine.begin() as connection:
        result = await connection.execute(telemetry.delete().where(telemetry.c.created_at < before))
        for levels in _LEVELS:
            if day < before:
                await _subtract_hours(connection, levels, day, before)
            hourly, daily = levels[0], levels[1]
            await connection.execute(hourly.delete().where(hourly.c.hour < before))
            await connection.execute(daily.delete().where(daily.c.day < day))
        await connection.execute(
            telemetry_hourly_latency.delete().where(telemetry_hourly_latency.c.hour < before)
        )
    return int(result.rowcount or 0)


async def purge_batch_keys(engine: AsyncEngine, before: datetime) -> int:
    """Delete the keys of batches written before ``before``; returns how many went."""
    keys = telemetry_batches
    async with engine.begin() as connection:
        result = await connection.execute(keys.delete().where(keys.c.written_at < before))
    return int(result.rowcount or 0)
