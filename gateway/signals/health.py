"""Provider health samples (ROUTING.md "Health"), before the score formula.

Per first-attempted ``provider`` over the window's rows with ``cache_hit = 0``,
leaving out calls that failed by the caller's own fault (an upstream 4xx other
than 408/429, recorded as ``upstream_4xx``, and a client disconnect):
samples = rows; successes = rows with ``success = 1 AND fallback_attempts = 0``
(a run rescued by a fallback is a failure of the primary); average latency
over the rows with ``fallback_attempts = 0``, None when there are none.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import Select, and_, case, func, or_, select
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.tables import telemetry
from gateway.domain import HealthSample
from gateway.domain.failures import ErrorClass

# Plain strings (the members' values) as bound parameters: the column holds the value.
CALLER_FAULTS: tuple[str, ...] = (
    ErrorClass.UPSTREAM_4XX.value,
    ErrorClass.CLIENT_DISCONNECTED.value,
)

_t = telemetry.c


def health_query(since: datetime) -> Select[str, int, int | None, float | None]:
    first_attempt_ok = and_(_t.success == 1, _t.fallback_attempts == 0)
    return (
        select(
            _t.provider,
            func.count(),
            func.sum(case((first_attempt_ok, 1), else_=0)),
            func.avg(case((_t.fallback_attempts == 0, _t.latency_ms), else_=None)),
        )
        .where(
            _t.created_at >= since,
            _t.provider.is_not(None),
            _t.cache_hit == 0,
            or_(_t.error_class.is_(None), _t.error_class.not_in(CALLER_FAULTS)),
        )
        .group_by(_t.provider)
    )


async def read_health(
    engine: AsyncEngine, window_seconds: int, now: datetime
) -> dict[str, HealthSample]:
    since = now - timedelta(seconds=window_seconds)
    async with engine.connect() as connection:
        rows = (await connection.execute(health_query(since))).all()
    return {
        provider: HealthSample(
            samples=int(samples),
            successes=int(successes or 0),
            avg_latency_ms=None if latency is None else float(latency),
        )
        for provider, samples, successes, latency in rows
    }
