"""Telemetry retention: rows older than ``telemetry.retentionDays`` are deleted, by whole hours.

The cutoff is rounded down to the start of its UTC hour, and the rows and the
hourly rollup of the hours before it go in one transaction: the rollup always
sums exactly the rows that are still there (docs/telemetry.md#telemetry_hourly),
so reads that take whole hours from the rollup and the rest from the rows agree
with reads of the rows alone. ``usage_daily`` is kept: it is the aggregate
budgets and monthly reports read, and it holds no per-call detail.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.engine import describe_error
from gateway.db.rollup_tables import telemetry_hourly, telemetry_hourly_latency
from gateway.db.tables import telemetry
from gateway.domain.clock import utc_now
from gateway.telemetry.rollup import hour_of

log = logging.getLogger(__name__)
PURGE_INTERVAL_SECONDS = 3600.0


class Retention:
    """Deletes what is past ``retention_days``: once at start, then every hour."""

    def __init__(
        self,
        engine: AsyncEngine,
        retention_days: int,
        *,
        interval: float = PURGE_INTERVAL_SECONDS,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._engine = engine
        self._days = retention_days
        self._interval = interval
        self._clock = clock
        self._task: asyncio.Task[None] | None = None
        self.purged = 0  # telemetry rows deleted by this process

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name="telemetry-purge")

    async def stop(self) -> None:
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None

    async def purge_now(self) -> int:
        """Delete rows past retention once; returns how many went."""
        count = await purge_telemetry(self._engine, retention_cutoff(self._clock(), self._days))
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


async def purge_telemetry(engine: AsyncEngine, before: datetime) -> int:
    """Delete telemetry rows and rollup hours before ``before`` (an hour's start);
    returns how many telemetry rows went.

    Runs hourly, so each purge removes about an hour of rows and the range
    delete on ``created_at`` (indexed) stays short.
    """
    before = hour_of(before)
    async with engine.begin() as connection:
        result = await connection.execute(telemetry.delete().where(telemetry.c.created_at < before))
        await connection.execute(telemetry_hourly.delete().where(telemetry_hourly.c.hour < before))
        await connection.execute(
            telemetry_hourly_latency.delete().where(telemetry_hourly_latency.c.hour < before)
        )
    return int(result.rowcount or 0)
