"""Telemetry retention: rows older than ``telemetry.retentionDays`` are deleted, by whole hours.

The cutoff is rounded down to the start of its UTC hour, and the rows and the
hourly rollup of the hours before it go in one transaction: the rollup always
sums exactly the rows that are still there (docs/telemetry.md#telemetry_hourly),
so reads that take whole hours from the rollup and the rest from the rows agree
with reads of the rows alone. ``usage_daily`` is kept: it is the aggregate
budgets and monthly reports read, and it holds no per-call detail.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.rollup_tables import telemetry_hourly, telemetry_hourly_latency
from gateway.db.tables import telemetry
from gateway.telemetry.rollup import hour_of


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
