"""Fill the rollup from what is already there (migrations 0004 and 0007, the benches).

:func:`backfill_rollup` reads the telemetry rows a day at a time (a range on the
indexed ``created_at``) and aggregates them with
:func:`gateway.telemetry.rollup.hourly_increments`, the function the telemetry writer
runs on every batch, so a backfilled hour equals a written one. :func:`backfill_levels`
then derives the day level and the one-row-per-key histograms from the hourly rollup,
a day at a time, with the writer's :func:`gateway.telemetry.rollup_levels.level_increments`.
The tables filled are expected to be empty: this inserts, it does not add.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import Table, func, select
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.rollup_tables import (
    HOURLY_COUNTERS,
    HOURLY_KEY_COLUMNS,
    LATENCY_KEY_COLUMNS,
    telemetry_daily,
    telemetry_daily_histogram,
    telemetry_hourly,
    telemetry_hourly_histogram,
    telemetry_hourly_latency,
)
from gateway.db.tables import telemetry
from gateway.telemetry.rollup import ROW_COLUMNS, hour_of, hourly_increments
from gateway.telemetry.rollup_levels import day_of, level_increments

STEP = timedelta(days=1)  # rows read per query
INSERT_CHUNK = 1000


def backfill_rollup(connection: Connection) -> int:
    """Aggregate every telemetry row into the rollup; returns how many rows were read."""
    t = telemetry.c
    first, last = connection.execute(select(func.min(t.created_at), func.max(t.created_at))).one()
    if first is None:
        return 0
    columns = [t[name] for name in ROW_COLUMNS]
    start = hour_of(first)
    read = 0
    while start <= last:
        end = start + STEP
        rows = connection.execute(
            select(*columns).where(t.created_at >= start, t.created_at < end)
        ).all()
        read += len(rows)
        hourly, latency = hourly_increments(rows)
        for table, values in ((telemetry_hourly, hourly), (telemetry_hourly_latency, latency)):
            for offset in range(0, len(values), INSERT_CHUNK):
                connection.execute(table.insert(), values[offset : offset + INSERT_CHUNK])
        start = end
    return read


def _insert(connection: Connection, table: Table, values: list[dict[str, Any]]) -> None:
    for offset in range(0, len(values), INSERT_CHUNK):
        connection.execute(table.insert(), values[offset : offset + INSERT_CHUNK])


def backfill_levels(connection: Connection) -> int:
    """Fill ``telemetry_daily`` and the two histograms from the hourly rollup; returns how
    many hourly rows were read."""
    h, lat = telemetry_hourly.c, telemetry_hourly_latency.c
    first, last = connection.execute(select(func.min(h.hour), func.max(h.hour))).one()
    if first is None:
        return 0
    hourly_columns = [h[name] for name in HOURLY_KEY_COLUMNS + HOURLY_COUNTERS]
    latency_columns = [lat[name] for name in (*LATENCY_KEY_COLUMNS, "calls")]
    start = day_of(hour_of(first))
    read = 0
    while start <= last:
        end = start + STEP
        hourly = [
            dict(row)
            for row in connection.execute(
                select(*hourly_columns).where(h.hour >= start, h.hour < end)
            ).mappings()
        ]
        latency = [
            dict(row)
            for row in connection.execute(
                select(*latency_columns).where(lat.hour >= start, lat.hour < end)
            ).mappings()
        ]
        read += len(hourly)
        levels = level_increments(hourly, latency)
        _insert(connection, telemetry_daily, levels.daily)
        _insert(connection, telemetry_hourly_histogram, levels.hourly_histogram)
        _insert(connection, telemetry_daily_histogram, levels.daily_histogram)
        start = end
    return read


async def backfill_rollup_engine(engine: AsyncEngine) -> int:
    """Both, for a caller holding an async engine (one transaction)."""
    async with engine.begin() as connection:
        read = await connection.run_sync(backfill_rollup)
        await connection.run_sync(backfill_levels)
        return read
