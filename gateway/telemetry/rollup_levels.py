"""The rollup's other shapes, derived from a batch's hourly increments
(docs/telemetry.md#telemetry_daily): the day level of the counters, and the latency
histogram with one row per key and a column per bucket, per hour and per day.

Each is a plain re-aggregation of what :func:`gateway.telemetry.rollup.hourly_increments`
produced, so every level sums the same rows: a day is the sum of its hours, a
``telemetry_hourly_histogram`` row holds the counts of the ``telemetry_hourly_latency``
rows of its key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Dialect
from sqlalchemy.sql.dml import Insert

from gateway.db.rollup_tables import (
    DAILY_HISTOGRAM_KEY,
    DAILY_KEY_COLUMNS,
    HISTOGRAM_COUNTERS,
    HOURLY_COUNTERS,
    HOURLY_HISTOGRAM_KEY,
    HOURLY_KEY_COLUMNS,
    telemetry_daily,
    telemetry_daily_histogram,
    telemetry_hourly_histogram,
)
from gateway.db.upserts import increment

Params = list[dict[str, Any]]


def day_of(hour: datetime) -> datetime:
    """The UTC day (its midnight) an hour of the rollup falls in."""
    return hour.replace(hour=0)


@dataclass(frozen=True, slots=True)
class LevelIncrements:
    daily: Params
    hourly_histogram: Params
    daily_histogram: Params


def daily_increments(hourly: Iterable[Mapping[str, Any]]) -> Params:
    """``telemetry_daily`` parameter sets: the hourly ones summed per day, sorted by key."""
    sums: dict[tuple[Any, ...], list[Any]] = {}
    for row in hourly:
        key = (day_of(row["hour"]), *(row[name] for name in HOURLY_KEY_COLUMNS[1:]))
        counters = [row[name] for name in HOURLY_COUNTERS]
        entry = sums.get(key)
        if entry is None:
            sums[key] = counters
        else:
            for i, value in enumerate(counters):
                entry[i] += value
    return [
        dict(zip(DAILY_KEY_COLUMNS + HOURLY_COUNTERS, (*key, *counters), strict=True))
        for key, counters in sorted(sums.items())
    ]


def histogram_increments(latency: Iterable[Mapping[str, Any]], *, daily: bool) -> Params:
    """Histogram parameter sets, one per (hour or day, provider, model, operation, kind),
    from ``telemetry_hourly_latency`` ones; ``calls`` is the total over the buckets."""
    width = len(HISTOGRAM_COUNTERS)
    sums: dict[tuple[Any, ...], list[int]] = {}
    for row in latency:
        hour = row["hour"]
        key = (
            day_of(hour) if daily else hour,
            row["provider"],
            row["model"],
            row["operation"],
            row["kind"],
        )
        counts = sums.get(key)
        if counts is None:
            counts = sums[key] = [0] * width
        counts[0] += row["calls"]
        counts[1 + int(row["bucket"])] += row["calls"]
    names = (DAILY_HISTOGRAM_KEY if daily else HOURLY_HISTOGRAM_KEY) + HISTOGRAM_COUNTERS
    return [dict(zip(names, (*key, *counts), strict=True)) for key, counts in sorted(sums.items())]


def level_increments(hourly: Params, latency: Params) -> LevelIncrements:
    return LevelIncrements(
        daily=daily_increments(hourly),
        hourly_histogram=histogram_increments(latency, daily=False),
        daily_histogram=histogram_increments(latency, daily=True),
    )


@dataclass(frozen=True, slots=True)
class LevelStatements:
    daily: Insert
    hourly_histogram: Insert
    daily_histogram: Insert


def level_statements(dialect: Dialect) -> LevelStatements:
    """The upserts adding a batch's :class:`LevelIncrements`."""
    return LevelStatements(
        daily=increment(dialect.name, telemetry_daily, DAILY_KEY_COLUMNS, HOURLY_COUNTERS),
        hourly_histogram=increment(
            dialect.name, telemetry_hourly_histogram, HOURLY_HISTOGRAM_KEY, HISTOGRAM_COUNTERS
        ),
        daily_histogram=increment(
            dialect.name, telemetry_daily_histogram, DAILY_HISTOGRAM_KEY, HISTOGRAM_COUNTERS
        ),
    )
