"""The call history (ROUTING.md "Call history", ADR-256): one GROUP BY over telemetry.

Population: rows of the last ``days`` days with ``success = 1``,
``fallback_attempts = 0`` and ``cache_hit = 0``, keyed by the serving provider
id, the served model id and the operation. ``ix_telemetry_call_history`` covers
every column read, so the database answers from the index alone.

``meanCost`` is ``SUM(actual_cost) / COUNT(actual_cost)`` divided in Python as a
Decimal rather than ``AVG`` in SQL: exact on PostgreSQL and MariaDB, whose
``SUM`` of a NUMERIC is exact. SQLite stores NUMERIC as doubles, so there the
sum is a double rounded back to 10 decimal places before the division.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.tables import telemetry
from gateway.domain import HistoryFigures, HistoryKey, Operation

_t = telemetry.c


HistoryQuery = Select[str | None, str | None, str, int, float | None, int, Decimal | None]


def call_history_query(since: datetime) -> HistoryQuery:
    return (
        select(
            _t.served_provider,
            _t.served_model,
            _t.operation,
            func.count(),
            func.avg(_t.latency_ms),
            func.count(_t.actual_cost),
            func.sum(_t.actual_cost),
        )
        .where(
            _t.created_at >= since,
            _t.success == 1,
            _t.fallback_attempts == 0,
            _t.cache_hit == 0,
        )
        .group_by(_t.served_provider, _t.served_model, _t.operation)
    )


async def read_call_history(
    engine: AsyncEngine, days: int, now: datetime
) -> dict[HistoryKey, HistoryFigures]:
    """Per (served provider id, served model id, operation): calls, mean latency, costed
    calls and mean cost over the population above. Unknown operations are skipped."""
    async with engine.connect() as connection:
        result = await connection.execute(call_history_query(now - timedelta(days=days)))
        rows = result.all()
    history: dict[HistoryKey, HistoryFigures] = {}
    for provider, model, operation_value, calls, mean_latency, costed, cost_sum in rows:
        if provider is None or model is None or operation_value not in _OPERATIONS:
            continue
        history[(provider, model, Operation(operation_value))] = HistoryFigures(
            calls=int(calls),
            mean_latency_ms=None if mean_latency is None else float(mean_latency),
            costed_calls=int(costed),
            mean_cost=_mean(cost_sum, int(costed)),
        )
    return history


_OPERATIONS = frozenset(operation.value for operation in Operation)


def _mean(total: Decimal | float | None, count: int) -> Decimal | None:
    if not count or total is None:
        return None
    if not isinstance(total, Decimal):
        total = Decimal(str(total))
    return total / count
