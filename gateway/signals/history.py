"""The call history (docs/routing.md#call-history): per serving provider, served model and
operation, over the last ``days`` days.

Population (gateway.routing.populations): rows with ``success = 1``,
``fallback_attempts = 0`` and ``cache_hit = 0`` that something served. The window's
whole hours come from the hourly rollup, the rest (the part of the first hour
inside the window and the current hour) from the telemetry rows, which
``ix_telemetry_call_history`` covers (gateway.signals.window). The result is the
same as a read of the rows alone: a test compares the two on every database.

Figures per key: calls; the mean total latency (a sum over a count, exact);
costed calls and the mean cost; and the latency the key is ranked on:
``routing.callHistoryStatistic`` (mean, or p50/p90 from the fixed log-scale
histogram, gateway.routing.latency_buckets) of the total latency, or for
``stream`` keys with ``routing.streamLatency: ttft`` of the time to first token.

``meanCost`` is ``SUM(actual_cost) / COUNT(actual_cost)`` divided in Python as a
Decimal: exact on PostgreSQL and MariaDB, whose ``SUM`` of a NUMERIC is exact.
SQLite stores NUMERIC as doubles, so there the sum is a double rounded back to 10
decimal places before the division.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, func, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from gateway.db.rollup_tables import telemetry_hourly, telemetry_hourly_latency
from gateway.db.tables import telemetry
from gateway.domain import HistoryFigures, HistoryKey, Operation
from gateway.domain.model import LatencyMeasure, LatencyStatistic
from gateway.routing.latency_buckets import bucket_of, percentile
from gateway.signals.window import WindowSplit, split_window

_t = telemetry.c
_h = telemetry_hourly.c
_l = telemetry_hourly_latency.c

PERCENTS: dict[str, int] = {"p50": 50, "p90": 90}
_OPERATIONS = frozenset(operation.value for operation in Operation)

RawKey = tuple[str | None, str | None, str]


@dataclass(slots=True)
class _Totals:
    calls: int = 0
    latency_sum: float = 0.0
    ttft_sum: float = 0.0
    ttft_calls: int = 0
    costed: int = 0
    cost_sum: Decimal = Decimal(0)
    total_buckets: dict[int, int] = field(default_factory=dict)
    ttft_buckets: dict[int, int] = field(default_factory=dict)


def _population() -> ColumnElement[bool]:
    return and_(_t.success == 1, _t.fallback_attempts == 0, _t.cache_hit == 0)


def call_history_query(since: datetime, until: datetime | None = None) -> Select[Any]:
    """The row-based aggregate over ``[since, until)`` (no upper bound without ``until``)."""
    window = [_t.created_at >= since]
    if until is not None:
        window.append(_t.created_at < until)
    return (
        select(
            _t.served_provider,
            _t.served_model,
            _t.operation,
            func.count(),
            func.sum(_t.latency_ms),
            func.sum(_t.time_to_first_token_ms),
            func.count(_t.time_to_first_token_ms),
            func.count(_t.actual_cost),
            func.sum(_t.actual_cost),
        )
        .where(*window, _population())
        .group_by(_t.served_provider, _t.served_model, _t.operation)
    )


def _latencies_query(since: datetime, until: datetime | None) -> Select[Any]:
    window = [_t.created_at >= since]
    if until is not None:
        window.append(_t.created_at < until)
    return select(
        _t.served_provider, _t.served_model, _t.operation, _t.latency_ms, _t.time_to_first_token_ms
    ).where(*window, _population())


def rollup_history_query(split: WindowSplit) -> Select[Any]:
    return (
        select(
            _h.provider,
            _h.model,
            _h.operation,
            func.sum(_h.history_calls),
            func.sum(_h.history_latency_sum_ms),
            func.sum(_h.history_ttft_sum_ms),
            func.sum(_h.history_ttft_calls),
            func.sum(_h.history_costed_calls),
            func.sum(_h.history_cost),
        )
        .where(_h.hour >= split.first_hour, _h.hour < split.last_hour, _h.history_calls > 0)
        .group_by(_h.provider, _h.model, _h.operation)
    )


def _rollup_buckets_query(split: WindowSplit) -> Select[Any]:
    return (
        select(_l.provider, _l.model, _l.operation, _l.kind, _l.bucket, func.sum(_l.calls))
        .where(_l.hour >= split.first_hour, _l.hour < split.last_hour)
        .group_by(_l.provider, _l.model, _l.operation, _l.kind, _l.bucket)
    )


def _raw_ranges(split: WindowSplit) -> list[tuple[datetime, datetime | None]]:
    if not split.has_rollup:
        return [(split.since, None)]
    ranges: list[tuple[datetime, datetime | None]] = [(split.last_hour, None)]
    if split.since < split.first_hour:
        ranges.insert(0, (split.since, split.first_hour))
    return ranges


def _add_sums(totals: dict[RawKey, _Totals], rows: Iterable[Sequence[Any]]) -> None:
    for provider, model, operation, calls, latency, ttft, ttft_calls, costed, cost in rows:
        entry = totals.setdefault((provider, model, operation), _Totals())
        entry.calls += int(calls or 0)
        entry.latency_sum += float(latency or 0.0)
        entry.ttft_sum += float(ttft or 0.0)
        entry.ttft_calls += int(ttft_calls or 0)
        entry.costed += int(costed or 0)
        if cost is not None:
            entry.cost_sum += cost if isinstance(cost, Decimal) else Decimal(str(cost))


async def _read_totals(
    connection: AsyncConnection, split: WindowSplit, *, buckets: bool
) -> dict[RawKey, _Totals]:
    totals: dict[RawKey, _Totals] = {}
    ranges = _raw_ranges(split)
    for since, until in ranges:
        _add_sums(totals, (await connection.execute(call_history_query(since, until))).all())
    if split.has_rollup:
        _add_sums(totals, (await connection.execute(rollup_history_query(split))).all())
    if not buckets:
        return totals
    for since, until in ranges:
        rows = await connection.execute(_latencies_query(since, until))
        for provider, model, operation, latency, ttft in rows:
            entry = totals.setdefault((provider, model, operation), _Totals())
            _count(entry.total_buckets, bucket_of(latency))
            if ttft is not None:
                _count(entry.ttft_buckets, bucket_of(ttft))
    if split.has_rollup:
        rows = await connection.execute(_rollup_buckets_query(split))
        for provider, model, operation, kind, bucket, calls in rows:
            entry = totals.setdefault((provider, model, operation), _Totals())
            target = entry.ttft_buckets if kind == "ttft" else entry.total_buckets
            _count(target, int(bucket), int(calls))
    return totals


def _count(counts: dict[int, int], bucket: int, calls: int = 1) -> None:
    counts[bucket] = counts.get(bucket, 0) + calls


def _figure(
    statistic: LatencyStatistic, total: float, calls: int, buckets: dict[int, int]
) -> float | None:
    if statistic == "mean":
        return total / calls if calls else None
    return percentile(buckets, PERCENTS[statistic])


def figures_of(
    totals: dict[RawKey, _Totals], statistic: LatencyStatistic, stream_latency: LatencyMeasure
) -> dict[HistoryKey, HistoryFigures]:
    history: dict[HistoryKey, HistoryFigures] = {}
    for (provider, model, operation_value), entry in totals.items():
        if not provider or not model or operation_value not in _OPERATIONS or not entry.calls:
            continue
        operation = Operation(operation_value)
        measure: LatencyMeasure = stream_latency if operation is Operation.STREAM else "total"
        history[(provider, model, operation)] = HistoryFigures(
            calls=entry.calls,
            mean_latency_ms=entry.latency_sum / entry.calls,
            costed_calls=entry.costed,
            mean_cost=entry.cost_sum / entry.costed if entry.costed else None,
            statistic=statistic,
            measure=measure,
            total_ms=None  # the mean's: mean_latency_ms
            if statistic == "mean"
            else _figure(statistic, entry.latency_sum, entry.calls, entry.total_buckets),
            ttft_ms=_figure(statistic, entry.ttft_sum, entry.ttft_calls, entry.ttft_buckets),
        )
    return history


async def read_call_history(
    engine: AsyncEngine,
    days: int,
    now: datetime,
    *,
    statistic: LatencyStatistic = "mean",
    stream_latency: LatencyMeasure = "ttft",
    use_rollup: bool = True,
) -> dict[HistoryKey, HistoryFigures]:
    """Per (served provider id, served model id, operation): the figures above. Unknown
    operations are skipped. ``use_rollup=False`` reads the rows alone (the reference)."""
    since = now - timedelta(days=days)
    split = split_window(since, now) if use_rollup else WindowSplit(since, since, since)
    async with engine.connect() as connection:
        totals = await _read_totals(connection, split, buckets=statistic != "mean")
    return figures_of(totals, statistic, stream_latency)
