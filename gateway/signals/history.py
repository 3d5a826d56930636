"""The call history (docs/routing.md#call-history): per serving provider, served model and
operation, over the last ``days`` days.

Population (gateway.routing.populations): rows with ``success = 1``,
``fallback_attempts = 0`` and ``cache_hit = 0`` that something served. The window's
whole days come from the day level of the rollup, its other whole hours from the
hour level, the rest (the part of the first hour inside the window and the current
hour) from the telemetry rows, which ``ix_telemetry_call_history`` covers
(gateway.signals.window); the rows' latencies are bucketed by the database
(gateway.signals.bucket_sql) and the rollup's histograms read one row per key
(``telemetry_*_histogram``). The result is the same as a read of the rows alone: a
test compares the two on every database.

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
from functools import cache
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    CompoundSelect,
    Double,
    Integer,
    Select,
    String,
    Table,
    and_,
    cast,
    func,
    literal_column,
    select,
    union_all,
)
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from gateway.db.rollup_tables import (
    BUCKET_COLUMNS,
    telemetry_daily,
    telemetry_daily_histogram,
    telemetry_hourly,
    telemetry_hourly_histogram,
)
from gateway.db.tables import telemetry
from gateway.domain import HistoryFigures, HistoryKey, Operation
from gateway.domain.model import LatencyMeasure, LatencyStatistic
from gateway.routing.latency_buckets import bucket_of, percentile
from gateway.signals.bucket_sql import bucket_expression
from gateway.signals.window import (
    Bound,
    Part,
    WindowSplit,
    counting_parts,
    in_period,
    marks,
    parts,
    split_window,
)

_t = telemetry.c

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


def call_history_query(since: Bound, until: Bound | None = None) -> Select[Any]:
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


def _rollup_sums_query(table: Table, period: str, start: Bound, end: Bound | None) -> Select[Any]:
    c = table.c
    return (
        select(
            c.provider,
            c.model,
            c.operation,
            func.sum(c.history_calls),
            func.sum(c.history_latency_sum_ms),
            func.sum(c.history_ttft_sum_ms),
            func.sum(c.history_ttft_calls),
            func.sum(c.history_costed_calls),
            func.sum(c.history_cost),
        )
        .where(in_period(c[period], start, end), c.history_calls > 0)
        .group_by(c.provider, c.model, c.operation)
    )


def _histogram_query(
    table: Table, period: str, start: Bound, end: Bound | None, *, packed: bool
) -> Select[Any]:
    c = table.c
    # MariaDB sums integers in DECIMAL, twice as slow as in doubles: there the counts are
    # summed as doubles, exact below 2^53 calls a bucket.
    double = literal_column("0e0", Double) if packed else None
    sums = [
        cast(func.sum(c[name] if double is None else c[name] + double), BigInteger)
        for name in BUCKET_COLUMNS
    ]
    return (
        select(
            c.provider,
            c.model,
            c.operation,
            c.kind,
            *([func.concat_ws(",", *sums)] if packed else sums),
        )
        .where(in_period(c[period], start, end))
        .group_by(c.provider, c.model, c.operation, c.kind)
    )


def _rows_buckets_query(since: Bound, until: Bound | None, *, packed: bool) -> Select[Any]:
    """Per key, kind and bucket: the calls of ``[since, until)``, bucketed by the database
    (packed: per key and kind, ``bucket:calls`` pairs joined by commas)."""
    window = [_t.created_at >= since, _population()]
    if until is not None:
        window.append(_t.created_at < until)
    key = (
        _t.served_provider.label("provider"),
        _t.served_model.label("model"),
        _t.operation.label("operation"),
    )
    total = select(
        *key,
        literal_column("'total'", String).label("kind"),
        bucket_expression(_t.latency_ms).label("bucket"),
    ).where(*window)
    ttft = select(
        *key,
        literal_column("'ttft'", String).label("kind"),
        bucket_expression(_t.time_to_first_token_ms).label("bucket"),
    ).where(*window, _t.time_to_first_token_ms.is_not(None))
    both = union_all(total, ttft).subquery()
    b = both.c
    counted = select(
        b.provider, b.model, b.operation, b.kind, b.bucket, func.count().label("calls")
    ).group_by(b.provider, b.model, b.operation, b.kind, b.bucket)
    if not packed:
        return counted
    g = counted.subquery().c
    pairs = func.group_concat(func.concat(g.bucket, ":", g.calls))
    return select(g.provider, g.model, g.operation, g.kind, pairs).group_by(
        g.provider, g.model, g.operation, g.kind
    )


# The rollup's tables per source: (counters, histogram, period column).
_LEVELS = {
    "hours": (telemetry_hourly, telemetry_hourly_histogram, "hour"),
    "days": (telemetry_daily, telemetry_daily_histogram, "day"),
}


# MariaDB's driver parses every value it returns in Python: there the bucket counts
# come back as one string per key and kind, which Python splits far faster.
_PACKED = frozenset({"mysql", "mariadb"})


def _part_query(kind: str, shape: tuple[str, bool], index: int, packed: bool) -> Select[Any]:
    source, bounded = shape
    start, end = marks(bounded, index)
    if source == "rows":
        if kind == "sums":
            query = call_history_query(start, end)
        else:
            query = _rows_buckets_query(start, end, packed=packed)
    else:
        counters, histogram, period = _LEVELS[source]
        if kind == "sums":
            query = _rollup_sums_query(counters, period, start, end)
        else:
            query = _histogram_query(histogram, period, start, end, packed=packed)
    return query.add_columns(literal_column(str(index), Integer).label("part"))


@cache
def _statement(
    kind: str, shapes: tuple[tuple[str, bool], ...], packed: bool
) -> Select[Any] | CompoundSelect[Any]:
    """``kind`` (sums or buckets) of the parts, one ``UNION ALL`` (one round trip), each
    row ending with its part's index. Built once with bind parameters: building the
    bucket ``CASE`` alone takes milliseconds."""
    queries = [_part_query(kind, shape, i, packed) for i, shape in enumerate(shapes)]
    return queries[0] if len(queries) == 1 else union_all(*queries)


async def _read(
    connection: AsyncConnection, kind: str, window: Sequence[Part]
) -> list[tuple[Part, Sequence[Any]]]:
    """Each row of the parts' reads with its part (the part's index column dropped).
    Bucket reads have a shape per source, so they go one part at a time, except where
    they are packed (MariaDB)."""
    packed = connection.dialect.name in _PACKED
    together = kind == "sums" or packed
    groups = [list(window)] if together else [[part] for part in window]
    out: list[tuple[Part, Sequence[Any]]] = []
    for group in groups:
        statement = _statement(kind, tuple(part.shape for part in group), packed)
        params: dict[str, datetime] = {}
        for i, part in enumerate(group):
            params.update(part.params(i))
        for row in await connection.execute(statement, params):
            out.append((group[row[-1]], row[:-1]))
    return out


def _bucket_counts(part: Part, row: Sequence[Any]) -> Iterable[tuple[int, int]]:
    """(bucket, calls) pairs of a bucket read's row, after its key and kind."""
    rest = row[4:]
    if part.source == "rows":
        if len(rest) == 2:
            return [(int(rest[0]), int(rest[1]))]
        pairs = (pair.partition(":") for pair in str(rest[0]).split(","))
        return [(int(bucket), int(calls)) for bucket, _, calls in pairs]
    counts = str(rest[0]).split(",") if len(rest) == 1 else rest
    return [(bucket, int(calls)) for bucket, calls in enumerate(counts) if int(calls)]


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


def _buckets_of(entry: _Totals, kind: str) -> dict[int, int]:
    return entry.ttft_buckets if kind == "ttft" else entry.total_buckets


async def _read_totals(
    connection: AsyncConnection, split: WindowSplit, *, buckets: bool
) -> dict[RawKey, _Totals]:
    """The window's figures from its parts: rows, rollup hours, rollup days."""
    totals: dict[RawKey, _Totals] = {}
    _add_sums(totals, (row for _, row in await _read(connection, "sums", parts(split))))
    if not buckets:
        return totals
    for part, row in await _read(connection, "buckets", counting_parts(split)):
        entry = totals.setdefault((row[0], row[1], row[2]), _Totals())
        target = _buckets_of(entry, row[3])
        for bucket, calls in _bucket_counts(part, row):
            _count(target, bucket, part.sign * calls)
    return totals


async def _read_row_totals(
    connection: AsyncConnection, since: datetime, *, buckets: bool
) -> dict[RawKey, _Totals]:
    """The window from the rows alone, bucketed in Python: the reference."""
    totals: dict[RawKey, _Totals] = {}
    _add_sums(totals, (await connection.execute(call_history_query(since))).all())
    if buckets:
        for provider, model, operation, latency, ttft in await connection.execute(
            _latencies_query(since, None)
        ):
            entry = totals.setdefault((provider, model, operation), _Totals())
            _count(entry.total_buckets, bucket_of(latency))
            if ttft is not None:
                _count(entry.ttft_buckets, bucket_of(ttft))
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
    buckets = statistic != "mean"
    async with engine.connect() as connection:
        if use_rollup:
            totals = await _read_totals(connection, split_window(since), buckets=buckets)
        else:
            totals = await _read_row_totals(connection, since, buckets=buckets)
    return figures_of(totals, statistic, stream_latency)
