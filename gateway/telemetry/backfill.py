"""Fill the hourly rollup from telemetry rows already there (migration 0004, the benches).

Reads the rows a day at a time (a range on the indexed ``created_at``) and aggregates
them with :func:`gateway.telemetry.rollup.hourly_increments`, the function the
telemetry writer runs on every batch, so a backfilled hour equals a written one.
The rollup tables are expected to be empty: this inserts, it does not add.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.rollup_tables import telemetry_hourly, telemetry_hourly_latency
from gateway.db.tables import telemetry
from gateway.telemetry.rollup import ROW_COLUMNS, hour_of, hourly_increments

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


async def backfill_rollup_engine(engine: AsyncEngine) -> int:
    """The same for a caller holding an async engine (one transaction)."""
    async with engine.begin() as connection:
        return await connection.run_sync(backfill_rollup)
