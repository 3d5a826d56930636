"""The rollup side of a telemetry batch (docs/telemetry.md#telemetry_hourly): aggregate in
memory, upsert once per key, in the transaction that inserts the rows.

Every telemetry row adds to one ``telemetry_hourly`` key: its UTC hour, the named
configuration, the key id, the served provider and model, the operation, the policy
mode and the first-attempted provider ('' for an absent part). Rows of the call-history
population (gateway.routing.populations) also add to ``telemetry_hourly_latency``: one
count in the bucket of their total latency and, when they have one, one in the bucket
of their time to first token. The increments are atomic in SQL, so concurrent workers
never lose an update, and the keys are sorted so that they lock in one order.

The migration that creates the tables fills them from existing rows with the same
functions, so a rollup is the same whichever wrote it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Protocol

from sqlalchemy.engine import Dialect
from sqlalchemy.sql.dml import Insert

from gateway.db.rollup_tables import (
    HOURLY_COUNTERS,
    HOURLY_KEY_COLUMNS,
    LATENCY_KEY_COLUMNS,
    telemetry_hourly,
    telemetry_hourly_latency,
)
from gateway.db.upserts import increment
from gateway.routing.latency_buckets import bucket_of
from gateway.routing.populations import in_call_history, in_health

TOTAL = "total"
TTFT = "ttft"


class RowLike(Protocol):
    """What the rollup reads of a row: a TelemetryRecord or a selected telemetry row."""

    @property
    def created_at(self) -> datetime: ...
    @property
    def configuration(self) -> str: ...
    @property
    def api_key_id(self) -> str | None: ...
    @property
    def operation(self) -> str: ...
    @property
    def provider(self) -> str | None: ...
    @property
    def served_provider(self) -> str | None: ...
    @property
    def served_model(self) -> str | None: ...
    @property
    def routing_policy_mode(self) -> str: ...
    @property
    def success(self) -> bool | int: ...
    @property
    def error_class(self) -> str | None: ...
    @property
    def cache_hit(self) -> bool | int: ...
    @property
    def fallback_attempts(self) -> int: ...
    @property
    def latency_ms(self) -> float: ...
    @property
    def time_to_first_token_ms(self) -> float | None: ...
    @property
    def actual_input_tokens(self) -> int | None: ...
    @property
    def actual_output_tokens(self) -> int | None: ...
    @property
    def actual_cost(self) -> Decimal | None: ...
    @property
    def estimated_cost(self) -> Decimal | None: ...


# The telemetry columns a RowLike needs (the migration's backfill selects these).
ROW_COLUMNS: tuple[str, ...] = (
    "created_at",
    "configuration",
    "api_key_id",
    "operation",
    "provider",
    "served_provider",
    "served_model",
    "routing_policy_mode",
    "success",
    "error_class",
    "cache_hit",
    "fallback_attempts",
    "latency_ms",
    "time_to_first_token_ms",
    "actual_input_tokens",
    "actual_output_tokens",
    "actual_cost",
    "estimated_cost",
)

HourlyKey = tuple[datetime, str, str, str, str, str, str, str]
LatencyKey = tuple[datetime, str, str, str, str, int]

_INDEX = {name: i for i, name in enumerate(HOURLY_COUNTERS)}
_MONEY = frozenset({"cost", "estimated_cost", "history_cost"})


def hour_of(moment: datetime) -> datetime:
    """The UTC hour a moment falls in (a naive moment is taken to be UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def _zeros() -> list[Any]:
    return [Decimal(0) if name in _MONEY else 0 for name in HOURLY_COUNTERS]


def _add(sums: list[Any], row: RowLike) -> None:
    i = _INDEX
    ok = bool(row.success)
    first_attempt = row.fallback_attempts == 0
    sums[i["calls"]] += 1
    sums[i["successes"]] += ok
    sums[i["errors"]] += not ok
    sums[i["cache_hits"]] += bool(row.cache_hit)
    sums[i["streams"]] += row.operation == "stream"
    sums[i["fallbacks"]] += not first_attempt
    sums[i["input_tokens"]] += row.actual_input_tokens or 0
    sums[i["output_tokens"]] += row.actual_output_tokens or 0
    if row.actual_cost is not None:
        sums[i["cost"]] += row.actual_cost
        sums[i["priced_calls"]] += 1
    sums[i["estimated_cost"]] += row.estimated_cost or 0
    sums[i["latency_sum_ms"]] += row.latency_ms
    ttft = row.time_to_first_token_ms
    if ttft is not None:
        sums[i["ttft_sum_ms"]] += ttft
        sums[i["ttft_calls"]] += 1
    if _in_history(row):
        sums[i["history_calls"]] += 1
        sums[i["history_latency_sum_ms"]] += row.latency_ms
        if ttft is not None:
            sums[i["history_ttft_sum_ms"]] += ttft
            sums[i["history_ttft_calls"]] += 1
        if row.actual_cost is not None:
            sums[i["history_costed_calls"]] += 1
            sums[i["history_cost"]] += row.actual_cost
    if in_health(provider=row.provider, cache_hit=bool(row.cache_hit), error_class=row.error_class):
        sums[i["health_samples"]] += 1
        if first_attempt:
            sums[i["health_successes"]] += ok
            sums[i["health_latency_sum_ms"]] += row.latency_ms
            sums[i["health_latency_calls"]] += 1


def _in_history(row: RowLike) -> bool:
    return in_call_history(
        success=bool(row.success),
        fallback_attempts=row.fallback_attempts,
        cache_hit=bool(row.cache_hit),
        served_provider=row.served_provider,
        served_model=row.served_model,
    )


def hourly_increments(rows: Iterable[RowLike]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The ``telemetry_hourly`` and ``telemetry_hourly_latency`` parameter sets, sorted by key."""
    hourly: dict[HourlyKey, list[Any]] = {}
    latency: dict[LatencyKey, int] = {}
    for row in rows:
        hour = hour_of(row.created_at)
        served_provider = row.served_provider or ""
        served_model = row.served_model or ""
        key: HourlyKey = (
            hour,
            row.configuration,
            row.api_key_id or "",
            served_provider,
            served_model,
            row.operation,
            row.routing_policy_mode or "",
            row.provider or "",
        )
        sums = hourly.get(key)
        if sums is None:
            sums = hourly[key] = _zeros()
        _add(sums, row)
        if _in_history(row):
            base = (hour, served_provider, served_model, row.operation)
            total: LatencyKey = (*base, TOTAL, bucket_of(row.latency_ms))
            latency[total] = latency.get(total, 0) + 1
            if row.time_to_first_token_ms is not None:
                first: LatencyKey = (*base, TTFT, bucket_of(row.time_to_first_token_ms))
                latency[first] = latency.get(first, 0) + 1
    return (
        [
            dict(zip(HOURLY_KEY_COLUMNS + HOURLY_COUNTERS, (*key, *sums), strict=True))
            for key, sums in sorted(hourly.items())
        ],
        [
            dict(zip((*LATENCY_KEY_COLUMNS, "calls"), (*key, calls), strict=True))
            for key, calls in sorted(latency.items())
        ],
    )


def rollup_statements(dialect: Dialect) -> tuple[Insert, Insert]:
    """The two upserts a batch runs: hourly counters, then histogram counts."""
    return (
        increment(dialect.name, telemetry_hourly, HOURLY_KEY_COLUMNS, HOURLY_COUNTERS),
        increment(dialect.name, telemetry_hourly_latency, LATENCY_KEY_COLUMNS, ("calls",)),
    )
