"""Provider health samples (docs/routing.md#health), before the score formula.

Per first-attempted ``provider`` over the window's rows with ``cache_hit = 0``,
leaving out calls that failed by the caller's own fault (an upstream 4xx other
than 408/429, recorded as ``upstream_4xx``, and a client disconnect):
samples = rows; successes = rows with ``success = 1 AND fallback_attempts = 0``
(a run rescued by a fallback is a failure of the primary); average latency
over the rows with ``fallback_attempts = 0``, None when there are none.

A window holding whole hours reads them from the hourly rollup (its
``health_*`` counters, keyed by ``attempted_provider``) and the rest from the
rows (gateway.signals.window); the default 900-second window is all rows, read
through ``ix_telemetry_health_window``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Select, and_, case, func, or_, select
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.rollup_tables import telemetry_hourly
from gateway.db.tables import telemetry
from gateway.domain import HealthSample
from gateway.routing.populations import CALLER_FAULTS
from gateway.signals.window import WindowSplit, split_window

_t = telemetry.c
_h = telemetry_hourly.c


def health_query(since: datetime, until: datetime | None = None) -> Select[Any]:
    """Per provider: samples, successes, latency sum and count over ``[since, until)``."""
    first_attempt = _t.fallback_attempts == 0
    window = [_t.created_at >= since]
    if until is not None:
        window.append(_t.created_at < until)
    return (
        select(
            _t.provider,
            func.count(),
            func.sum(case((and_(_t.success == 1, first_attempt), 1), else_=0)),
            func.sum(case((first_attempt, _t.latency_ms), else_=None)),
            func.sum(case((first_attempt, 1), else_=0)),
        )
        .where(
            *window,
            _t.provider.is_not(None),
            _t.cache_hit == 0,
            or_(_t.error_class.is_(None), _t.error_class.not_in(CALLER_FAULTS)),
        )
        .group_by(_t.provider)
    )


def rollup_health_query(split: WindowSplit) -> Select[Any]:
    return (
        select(
            _h.attempted_provider,
            func.sum(_h.health_samples),
            func.sum(_h.health_successes),
            func.sum(_h.health_latency_sum_ms),
            func.sum(_h.health_latency_calls),
        )
        .where(_h.hour >= split.first_hour, _h.hour < split.last_hour, _h.health_samples > 0)
        .group_by(_h.attempted_provider)
    )


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
    split = split_window(since, now) if use_rollup else WindowSplit(since, since, since)
    totals: dict[str, list[Any]] = {}
    async with engine.connect() as connection:
        if split.has_rollup:
            if split.since < split.first_hour:
                query = health_query(split.since, split.first_hour)
                _add(totals, (await connection.execute(query)).all())
            _add(totals, (await connection.execute(rollup_health_query(split))).all())
            _add(totals, (await connection.execute(health_query(split.last_hour))).all())
        else:
            _add(totals, (await connection.execute(health_query(since))).all())
    return {
        provider: HealthSample(
            samples=samples,
            successes=successes,
            avg_latency_ms=latency / latency_calls if latency_calls else None,
        )
        for provider, (samples, successes, latency, latency_calls) in totals.items()
        if samples
    }
