"""Telemetry retention: rows older than ``telemetry.retentionDays`` are deleted.

``usage_daily`` is kept: it is the aggregate budgets and monthly reports read,
and it holds no per-call detail.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.tables import telemetry


def retention_cutoff(now: datetime, retention_days: int) -> datetime:
    return now - timedelta(days=retention_days)


async def purge_telemetry(engine: AsyncEngine, before: datetime) -> int:
    """Delete telemetry rows created before ``before``; returns how many went.

    Runs hourly, so each purge removes about an hour of rows and the range
    delete on ``created_at`` (indexed) stays short.
    """
    async with engine.begin() as connection:
        result = await connection.execute(telemetry.delete().where(telemetry.c.created_at < before))
    return int(result.rowcount or 0)
