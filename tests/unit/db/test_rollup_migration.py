"""Migrations 0004 and 0007 fill the rollup (its hours, then its days and histograms) from
the rows already there, as the writer would."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db import migrate
from gateway.db.engine import create_engine
from gateway.db.rollup_tables import (
    telemetry_daily,
    telemetry_daily_histogram,
    telemetry_hourly,
    telemetry_hourly_histogram,
    telemetry_hourly_latency,
)
from gateway.db.tables import telemetry
from gateway.signals.history import read_call_history
from gateway.telemetry.records import to_row
from gateway.telemetry.writer import TelemetryWriter
from tests.unit.db.scratch import BACKENDS, scratch_database
from tests.unit.signals.test_rollup_reads import random_records
from tests.unit.telemetry.factory import NOW

NEW_COLUMNS = ("output_tokens_per_second", "upstream_model", "team_id")  # after 0006
ROLLUP = {
    "hourly": telemetry_hourly,
    "latency": telemetry_hourly_latency,
    "daily": telemetry_daily,
    "hourly_histogram": telemetry_hourly_histogram,
    "daily_histogram": telemetry_daily_histogram,
}


@pytest.fixture(params=BACKENDS)
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with scratch_database(request.param, tmp_path) as url:
        yield url
        migrate.downgrade(url)


async def _rollup(engine: AsyncEngine) -> dict[str, list[dict[str, Any]]]:
    tables = ROLLUP
    out: dict[str, list[dict[str, Any]]] = {}
    async with engine.connect() as connection:
        for name, table in tables.items():
            key = [
                c
                for c in table.c
                if c.name
                in {
                    "hour",
                    "day",
                    "configuration",
                    "api_key_id",
                    "provider",
                    "model",
                    "operation",
                    "mode",
                    "attempted_provider",
                    "kind",
                    "bucket",
                }
            ]
            rows = (await connection.execute(select(table).order_by(*key))).mappings().all()
            out[name] = [dict(row) for row in rows]
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(a, Decimal) and isinstance(b, Decimal):
        return abs(a - b) < Decimal("1e-9")
    return bool(a == b)


async def test_the_backfill_equals_what_the_writer_keeps(empty_url: str) -> None:
    records = random_records(random.Random(11), 900)
    migrate.upgrade(empty_url, "0006")  # the revision before 0004
    engine = create_engine(empty_url)
    limits: dict[str, int] = {}
    try:
        rows = [to_row(record, limits) for record in records]
        for row in rows:
            for name in NEW_COLUMNS:
                row.pop(name)
        async with engine.begin() as connection:  # rows written before the rollup existed
            await connection.execute(telemetry.insert(), rows)
        migrate.upgrade(empty_url)
        backfilled = await _rollup(engine)
        assert sum(row["calls"] for row in backfilled["hourly"]) == len(records)
        rolled = await read_call_history(engine, 7, NOW, statistic="p90")
        by_rows = await read_call_history(engine, 7, NOW, statistic="p90", use_rollup=False)
        assert {k: (f.calls, f.total_ms, f.ttft_ms) for k, f in rolled.items()} == {
            k: (f.calls, f.total_ms, f.ttft_ms) for k, f in by_rows.items()
        }

        async with engine.begin() as connection:
            for table in (telemetry, *ROLLUP.values()):
                await connection.execute(table.delete())
        writer = TelemetryWriter(engine)
        for record in records:
            writer.submit(record)
        await writer.flush()
        written = await _rollup(engine)
    finally:
        await engine.dispose()
    for name in ROLLUP:
        assert len(backfilled[name]) == len(written[name]) > 0
        for left, right in zip(backfilled[name], written[name], strict=True):
            assert left.keys() == right.keys()
            assert all(_same(left[k], right[k]) for k in left), (left, right)
