"""Batch keys: a batch written again (the writer process restarted before it acknowledged
the batch) writes nothing, on every database; retention purges old keys."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.rollup_tables import (
    telemetry_daily,
    telemetry_daily_histogram,
    telemetry_hourly,
    telemetry_hourly_histogram,
    telemetry_hourly_latency,
)
from gateway.db.tables import telemetry, telemetry_batches, usage_daily
from gateway.telemetry.batches import BatchWriter, Entry, RetryPolicy
from gateway.telemetry.retention import purge_batch_keys
from tests.unit.telemetry.factory import NOW, make_record

AGGREGATES = (
    usage_daily,
    telemetry_hourly,
    telemetry_daily,
    telemetry_hourly_latency,
    telemetry_hourly_histogram,
    telemetry_daily_histogram,
)


async def _snapshot(engine: AsyncEngine) -> dict[str, Any]:
    """Every row of the telemetry table and of every aggregate, comparable."""
    found: dict[str, Any] = {}
    async with engine.connect() as connection:
        rows = (await connection.execute(select(telemetry))).mappings().all()
        found["telemetry"] = sorted(row["correlation_id"] for row in rows)
        for table in AGGREGATES:
            result = (await connection.execute(select(table))).all()
            found[table.name] = sorted(tuple(map(str, row)) for row in result)
    return found


async def _keys(engine: AsyncEngine) -> int:
    async with engine.connect() as connection:
        count = select(func.count()).select_from(telemetry_batches)
        return int((await connection.execute(count)).scalar_one())


def _entries(count: int, *, refused: int | None = None) -> list[Entry]:
    return [
        Entry(
            make_record(
                request_id=f"r{index}",
                actual_input_tokens=10**19 if index == refused else 10,
                actual_output_tokens=5,
                latency_ms=100.0 + index,
            )
        )
        for index in range(count)
    ]


async def test_a_batch_written_twice_under_its_key_is_written_once(engine: AsyncEngine) -> None:
    writer = BatchWriter(engine, RetryPolicy(attempts=2, delay=0.01))
    first = await writer.write("k:1", _entries(5))
    once = await _snapshot(engine)
    assert len(once["telemetry"]) == 5 and once["usage_daily"] and once["telemetry_hourly"]
    again = await writer.write("k:1", _entries(5))
    assert (first.written, again.written, again.dropped) == (5, 5, 0)
    assert writer.duplicates == 1
    assert await _snapshot(engine) == once  # rows, usage_daily and every rollup: once
    assert await _keys(engine) == 1
    await writer.write("k:2", _entries(5))  # another key: written again
    twice = await _snapshot(engine)
    assert len(twice["telemetry"]) == 10


async def test_a_split_batch_sent_again_writes_each_half_once(engine: AsyncEngine) -> None:
    """A refused row splits the batch into halves with keys of their own; the batch sent
    again is split the same way and finds every half written."""
    writer = BatchWriter(engine, RetryPolicy(attempts=2, delay=30.0))
    first = await writer.write("k:9", _entries(9, refused=6))
    once = await _snapshot(engine)
    assert once["telemetry"] == [f"r{i}" for i in range(9) if i != 6]
    again = await writer.write("k:9", _entries(9, refused=6))
    assert (first.written, first.rejected) == (8, 1)
    assert (again.written, again.rejected) == (8, 1)
    assert await _snapshot(engine) == once


async def test_retention_purges_batch_keys_older_than_its_cutoff(engine: AsyncEngine) -> None:
    writer = BatchWriter(engine)
    await writer.write("k:old", _entries(1))
    assert await purge_batch_keys(engine, NOW - timedelta(days=3650)) == 0
    assert await purge_batch_keys(engine, NOW + timedelta(days=3650)) == 1
    assert await _keys(engine) == 0
