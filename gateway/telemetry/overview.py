"""The console Overview's figures over whole UTC days, from the aggregates the telemetry
writer keeps (docs/console.md#overview): no telemetry row is read, whatever the range.

- ``usage_daily``: calls answered, tokens, cost, cost per day, and the top
  configurations, keys and served models by cost.
- ``telemetry_hourly``: every call of the range (answered or not, cache hits
  included): calls, errors (``success = 0``), cache hits, fallbacks
  (``fallback_attempts > 0``) and streams.
- ``telemetry_hourly_latency``: the latency histogram of the call-history population
  (first-attempt, uncached successes that something served), from which the latency
  and the streams' time to first token percentiles are read (nearest rank on the
  fixed log-scale buckets, gateway.routing.latency_buckets: within about 9 %).

A range starts at a UTC midnight and has no end, so it is made of whole rollup hours:
the writer adds each batch to its hours, the current one included, in the
transaction that inserts the rows, so the rollup's hours from the range's start hold
exactly the rows from that moment on (docs/telemetry.md#telemetry_hourly).

The rollup of a busy month is large (a row per hour and key), so each process keeps
the rollup figures of the days that ended more than ``SETTLE`` ago (:class:`SettledDays`,
read from the rollup's day level, a row per key and day) and reads the hourly level
again only for today (and yesterday, until it settles). A
settled day is read again ``REREAD_SECONDS`` after it was read, at most
``REREAD_PER_READ`` per Overview, so rows written late (a stream longer than
``SETTLE``, a batch retried through a database outage) and retention purges show
within minutes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from gateway.db.rollup_tables import (
    BUCKET_COLUMNS,
    telemetry_daily,
    telemetry_daily_histogram,
    telemetry_hourly,
    telemetry_hourly_latency,
)
from gateway.db.tables import usage_daily
from gateway.routing.latency_buckets import percentile
from gateway.telemetry.rollup import TTFT

TOP = 10  # configurations, keys and served models listed by cost
STREAM = "stream"
SETTLE = timedelta(hours=1)  # a day is remembered once it ended this long ago
REREAD_SECONDS = 600.0  # a remembered day is due to be read again after this long
REREAD_PER_READ = 3  # due days read again by one Overview (the rest wait for the next)
KEPT_DAYS = 31  # the longest range: older days are forgotten
DAY = timedelta(days=1)

_h = telemetry_hourly.c
_d = telemetry_daily.c
_dh = telemetry_daily_histogram.c
_l = telemetry_hourly_latency.c
_u = usage_daily.c
_RATES = ("calls", "errors", "cache_hits", "fallbacks", "streams")


@dataclass(slots=True)
class RollupFigures:
    """What the Overview sums from the hourly rollup over some hours."""

    calls: int = 0
    errors: int = 0
    cache_hits: int = 0
    fallbacks: int = 0
    streams: int = 0
    total: dict[int, int] = field(default_factory=dict)  # latency buckets, every operation
    ttft: dict[int, int] = field(default_factory=dict)  # time to first token, streams

    def add(self, other: RollupFigures) -> None:
        self.calls += other.calls
        self.errors += other.errors
        self.cache_hits += other.cache_hits
        self.fallbacks += other.fallbacks
        self.streams += other.streams
        for mine, theirs in ((self.total, other.total), (self.ttft, other.ttft)):
            for bucket, calls in theirs.items():
                mine[bucket] = mine.get(bucket, 0) + calls

    def rates(self) -> dict[str, int]:
        return {
            "calls": self.calls,
            "errors": self.errors,
            "cacheHits": self.cache_hits,
            "fallbacks": self.fallbacks,
            "streams": self.streams,
        }

    def latency(self) -> dict[str, Any]:
        return {
            "calls": sum(self.total.values()),
            "p50Ms": percentile(self.total, 50),
            "p95Ms": percentile(self.total, 95),
            "streams": sum(self.ttft.values()),
            "ttftP50Ms": percentile(self.ttft, 50),
            "ttftP95Ms": percentile(self.ttft, 95),
        }


def start_of(day: date) -> datetime:
    return datetime.combine(day, datetime.min.time(), UTC)


async def read_rollup(connection: AsyncConnection, since: datetime) -> RollupFigures:
    """The hourly rollup's figures of the hours from ``since`` on."""
    sums = select(*(func.sum(_h[name]) for name in _RATES)).where(_h.hour >= since)
    row = (await connection.execute(sums)).one()
    calls, errors, cache_hits, fallbacks, streams = (int(value or 0) for value in row)
    figures = RollupFigures(calls, errors, cache_hits, fallbacks, streams)
    query = (
        select(_l.kind, _l.bucket, func.sum(_l.calls))
        .where(_l.hour >= since, or_(_l.kind != TTFT, _l.operation == STREAM))
        .group_by(_l.kind, _l.bucket)
    )
    for kind, bucket, calls in await connection.execute(query):
        target = figures.ttft if kind == TTFT else figures.total
        target[int(bucket)] = int(calls or 0)
    return figures


async def read_days(connection: AsyncConnection, days: list[date]) -> dict[date, RollupFigures]:
    """The figures of each of ``days`` from the rollup's day level (``telemetry_daily``
    and ``telemetry_daily_histogram``, a row per key and day rather than per key and
    hour); a day without rows has empty figures."""
    figures = {day: RollupFigures() for day in days}
    if not days:
        return figures
    starts = [start_of(day) for day in days]
    sums = (
        select(_d.day, *(func.sum(_d[name]) for name in _RATES))
        .where(_d.day.in_(starts))
        .group_by(_d.day)
    )
    for moment, *counts in await connection.execute(sums):
        calls, errors, cache_hits, fallbacks, streams = (int(value or 0) for value in counts)
        figures[_day_of(moment)] = RollupFigures(calls, errors, cache_hits, fallbacks, streams)
    histograms = (
        select(_dh.day, _dh.kind, *(func.sum(_dh[column]) for column in BUCKET_COLUMNS))
        .where(_dh.day.in_(starts), or_(_dh.kind != TTFT, _dh.operation == STREAM))
        .group_by(_dh.day, _dh.kind)
    )
    for moment, kind, *buckets in await connection.execute(histograms):
        day = figures[_day_of(moment)]
        target = day.ttft if kind == TTFT else day.total
        for bucket, calls in enumerate(buckets):
            if calls:
                target[bucket] = target.get(bucket, 0) + int(calls)
    return figures


def _day_of(moment: datetime) -> date:
    return moment.astimezone(UTC).date() if moment.tzinfo else moment.date()


class SettledDays:
    """One process's rollup figures of the UTC days that ended more than ``SETTLE`` ago."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._days: dict[date, tuple[float, RollupFigures]] = {}

    async def figures(
        self, connection: AsyncConnection, first_day: date, now: datetime
    ) -> RollupFigures:
        """The rollup's figures from ``first_day`` on: settled days from memory (read
        when missing or due, at most ``REREAD_PER_READ`` due ones), the rest from the
        database."""
        settled_before = (now - SETTLE).astimezone(UTC).date()
        settled = [first_day + n * DAY for n in range(max(0, (settled_before - first_day).days))]
        moment = self._clock()
        missing = [day for day in settled if day not in self._days]
        due = sorted(
            (d for d in settled if d in self._days and moment - self._days[d][0] >= REREAD_SECONDS),
            key=lambda day: self._days[day][0],  # the longest remembered first
        )
        for day, read in (await read_days(connection, missing + due[:REREAD_PER_READ])).items():
            self._days[day] = (moment, read)
        for day in [d for d in self._days if d < settled_before - KEPT_DAYS * DAY]:
            del self._days[day]
        figures = await read_rollup(connection, start_of(max(first_day, settled_before)))
        for day in settled:
            figures.add(self._days[day][1])
        return figures


async def overview_figures(
    engine: AsyncEngine, first_day: date, now: datetime, days: SettledDays | None = None
) -> dict[str, Any]:
    """Every figure of the Overview from ``first_day`` (a UTC day) on; without ``days``
    every hour is read from the database."""
    async with engine.connect() as connection:
        usage = await usage_figures(connection, first_day)
        if days is None:
            rollup = await read_rollup(connection, start_of(first_day))
        else:
            rollup = await days.figures(connection, first_day, now)
    return {**usage, "rates": rollup.rates(), "latency": rollup.latency()}


async def usage_figures(connection: AsyncConnection, first_day: date) -> dict[str, Any]:
    """Calls answered, tokens and cost from ``usage_daily`` since ``first_day``: in all, per
    day, and the top configurations, keys and served models by cost."""
    since = _u.day >= first_day
    sums = (
        func.sum(_u.requests).label("calls"),
        func.sum(_u.input_tokens).label("input"),
        func.sum(_u.output_tokens).label("output"),
        func.sum(_u.cost).label("cost"),
    )
    total = (await connection.execute(select(*sums).where(since))).mappings().one()
    per_day = (
        (await connection.execute(select(_u.day, *sums).where(since).group_by(_u.day)))
        .mappings()
        .all()
    )
    tops: dict[str, list[dict[str, Any]]] = {}
    for name, column in (
        ("configurations", _u.configuration),
        ("keys", _u.api_key_id),
        ("teams", _u.team_id),  # '' is the calls of keys without a team
        ("models", _u.model),
    ):
        query = (
            select(column.label("name"), *sums)
            .where(since)
            .group_by(column)
            .order_by(func.sum(_u.cost).desc(), column)
            .limit(TOP)
        )
        rows = (await connection.execute(query)).mappings().all()
        tops[name] = [
            {"name": r["name"], "calls": int(r["calls"] or 0), "cost": money(r["cost"])}
            for r in rows
        ]
    return {
        "calls": int(total["calls"] or 0),
        "inputTokens": int(total["input"] or 0),
        "outputTokens": int(total["output"] or 0),
        "cost": money(total["cost"]),
        "costPerDay": {r["day"]: money(r["cost"]) for r in per_day},
        "top": tops,
    }


def money(value: Any) -> str:
    """A summed money column as a normalised decimal string (0 for no rows)."""
    return format(Decimal(str(value or 0)).normalize(), "f")
