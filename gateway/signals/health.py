"""Provider health samples (docs/routing.md#health), before the score formula.

Per first-attempted ``provider`` over the window's rows with ``cache_hit = 0``,
leaving out calls that failed by the caller's own fault (an upstream 4xx other
than 408/429, recorded as ``upstream_4xx``, and a client disconnect):
samples = rows; successes = rows with ``success = 1 AND fallback_attempts = 0``
(a run rescued by a fallback is a failure of the primary); average latency
over the rows with ``fallback_attempts = 0``, None when there are none.

The window's part of its first hour is read from the rows (through
``ix_telemetry_health_window``), the rest from the rollup's hours and days (their
``health_*`` counters, keyed by ``attempted_provider``; gateway.signals.window).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from sqlalchemy import CompoundSelect, Select, and_, case, func, or_, select, union_all
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.rollup_tables import telemetry_daily, telemetry_hourly
from gateway.db.tables import telemetry
from gateway.domain import HealthSample
from gateway.routing.populations import NOT_PROVIDER_FAULTS
from gateway.signals.window import Bound, in_period, marks, parts, rows_only, split_window

_t = telemetry.c


def health_query(since: Bound, until: Bound | None = None) -> Select[Any]:
    """Per provider: samples, successes, latency sum and count over ``[since, until)``."""
    first_attempt = _t.fallback_attempts == 0
    return (
        select(
            _t.provider,
            func.count(),
            func.sum(case((and_(_t.success == 1, first_attempt), 1), else_=0)),
            func.sum(case((first_attempt, _t.latency_ms), else_=None)),
            func.sum(case((first_attempt, 1), else_=0)),
        )
        .where(
            in_period(_t.created_at, since, until),
            _t.provider.is_not(None),
            _t.cache_hit == 0,
            or_(_t.error_class.is_(None), _t.error_class.not_in(NOT_PROVIDER_FAULTS)),
        )
        .group_by(_t.provider)
    )


_LEVELS = {"hours": (telemetry_hourly, "hour"), "days": (telemetry_daily, "day")}


def _part_query(shape: tuple[str, bool], index: int) -> Select[Any]:
    source, bounded = shape
    start, end = marks(bounded, index)
    if source == "rows":
        return health_query(start, end)
    table, period = _LEVELS[source]
    c = table.c
    return (
        select(
            c.attempted_provider,
            func.sum(c.health_samples),
            func.sum(c.health_successes),
            func.sum(c.health_latency_sum_ms),
            func.sum(c.health_latency_calls),
        )
        .where(in_period(c[period], start, end), c.health_samples > 0)
        .group_by(c.attempted_provider)
    )


@cache
def _statement(shapes: tuple[tuple[str, bool], ...]) -> Select[Any] | CompoundSelect[Any]:
    """The parts' reads in one ``UNION ALL``, built once with bind parameters."""
    queries = [_part_query(shape, i) for i, shape in enumerate(shapes)]
    return queries[0] if len(queries) == 1 else union_all(*queries)


def _add(totals: dict[str, list[Any]], rows: Iterable[Sequence[Any]]) -> None:
    for provider, samples, successes, latency, latency_calls in rows:
        if not provider:
            continue
        entry = totals.setdefault(provider, [0, 0, 0.0, 0])
        entry[0] += int(samples or 0)
        entry[1] += int(successes or 0)
        entry[2] += float(latency or 0.0)
        entry[3] += int(latency_calls or 0)


async def read_health(
    engine: AsyncEngine, window_seconds: int, now: datetime, *, use_rollup: bool = True
) -> dict[str, HealthSample]:
    since = now - timedelta(seconds=window_seconds)
    window = parts(split_window(since)) if use_rollup else rows_only(since)
    params: dict[str, datetime] = {}
    for i, part in enumerate(window):
        params.update(part.params(i))
    totals: dict[str, list[Any]] = {}
    async with engine.connect() as connection:
        statement = _statement(tuple(part.shape for part in window))
        _add(totals, (await connection.execute(statement, params)).all())
    return {
        provider: HealthSample(
            samples=samples,
            successes=successes,
            avg_latency_ms=latency / latency_calls if latency_calls else None,
        )
        for provider, (samples, successes, latency, latency_calls) in totals.items()
        if samples
    }
