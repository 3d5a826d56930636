"""The rollup of telemetry (docs/telemetry.md#telemetry_hourly): written by the
telemetry writer in the transaction that inserts the rows it sums, added to
atomically (``calls = calls + excluded.calls``), and read by the call-history and
health reads and the console instead of scanning telemetry.

Two levels: per UTC hour (``telemetry_hourly``, ``telemetry_hourly_latency`` and its
one-row-per-key form ``telemetry_hourly_histogram``) and per UTC day
(``telemetry_daily``, ``telemetry_daily_histogram``), the day's rows summing its
hours. Migrations ``0004_telemetry_rollup`` and ``0007_telemetry_daily_rollup``
create the same schema and fill it from the rows already there; a test compares
the two.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Double,
    Integer,
    SmallInteger,
    String,
    Table,
    UniqueConstraint,
)

from gateway.db.base import metadata
from gateway.db.tables import EMPTY, ID_LEN, MODEL_LEN, OPERATION_LEN, ZERO
from gateway.db.types import Money, UtcDateTime
from gateway.routing.latency_buckets import LAST

MODE_LEN = 32


def _key(name: str, length: int) -> Column[str]:
    # '' rather than NULL for an absent part: NULLs never collide in a unique key.
    return Column(name, String(length), nullable=False, server_default=EMPTY)


def _sum(name: str) -> Column[int]:
    return Column(name, BigInteger, nullable=False, default=0, server_default=ZERO)


HOURLY_KEY_COLUMNS: tuple[str, ...] = (
    "hour",
    "configuration",
    "api_key_id",
    "provider",
    "model",
    "operation",
    "mode",
    "attempted_provider",
)

# Every counter, in the order gateway.telemetry.rollup fills them.
HOURLY_COUNTERS: tuple[str, ...] = (
    "calls",
    "successes",
    "errors",
    "cache_hits",
    "streams",
    "fallbacks",
    "input_tokens",
    "output_tokens",
    "cost",
    "priced_calls",
    "estimated_cost",
    "latency_sum_ms",
    "ttft_sum_ms",
    "ttft_calls",
    "history_calls",
    "history_latency_sum_ms",
    "history_ttft_sum_ms",
    "history_ttft_calls",
    "history_costed_calls",
    "history_cost",
    "health_samples",
    "health_successes",
    "health_latency_sum_ms",
    "health_latency_calls",
)

_MONEY = frozenset({"cost", "estimated_cost", "history_cost"})
_DOUBLE = frozenset(name for name in HOURLY_COUNTERS if name.endswith("_ms"))


def _counter(name: str) -> Column[Any]:
    if name in _MONEY:
        return Column(name, Money, nullable=False, default=0, server_default=ZERO)
    if name in _DOUBLE:
        return Column(name, Double, nullable=False, default=0, server_default=ZERO)
    return _sum(name)


def _counters_table(name: str, period: str) -> Table:
    return Table(
        name,
        metadata,
        Column(period, UtcDateTime, nullable=False),  # the UTC hour/day of the rows' created_at
        _key("configuration", ID_LEN),
        _key("api_key_id", ID_LEN),
        _key("provider", ID_LEN),  # served
        _key("model", MODEL_LEN),  # served
        _key("operation", OPERATION_LEN),
        _key("mode", MODE_LEN),
        _key("attempted_provider", ID_LEN),  # first attempted (health is keyed by it)
        *(_counter(name) for name in HOURLY_COUNTERS),
        UniqueConstraint(period, *HOURLY_KEY_COLUMNS[1:], name=f"uq_{name}_key"),
    )


telemetry_hourly = _counters_table("telemetry_hourly", "hour")
telemetry_daily = _counters_table("telemetry_daily", "day")
DAILY_KEY_COLUMNS: tuple[str, ...] = ("day", *HOURLY_KEY_COLUMNS[1:])

LATENCY_KEY_COLUMNS: tuple[str, ...] = ("hour", "provider", "model", "operation", "kind", "bucket")

telemetry_hourly_latency = Table(
    "telemetry_hourly_latency",
    metadata,
    Column("hour", UtcDateTime, nullable=False),
    _key("provider", ID_LEN),
    _key("model", MODEL_LEN),
    _key("operation", OPERATION_LEN),
    Column("kind", String(8), nullable=False),  # total | ttft
    Column("bucket", SmallInteger, nullable=False),  # gateway.routing.latency_buckets
    _sum("calls"),
    UniqueConstraint(*LATENCY_KEY_COLUMNS, name="uq_telemetry_hourly_latency_key"),
)

# The histogram with one row per (period, provider, model, operation, kind) and a column
# per bucket: a window's histogram is a sum over a few rows rather than over one row
# per bucket (docs/telemetry.md#telemetry_hourly_histogram).
BUCKET_COLUMNS: tuple[str, ...] = tuple(f"b{i}" for i in range(LAST + 1))
HISTOGRAM_COUNTERS: tuple[str, ...] = ("calls", *BUCKET_COLUMNS)


def _histogram_table(name: str, period: str) -> Table:
    return Table(
        name,
        metadata,
        Column(period, UtcDateTime, nullable=False),
        _key("provider", ID_LEN),
        _key("model", MODEL_LEN),
        _key("operation", OPERATION_LEN),
        Column("kind", String(8), nullable=False),  # total | ttft
        _sum("calls"),
        # INTEGER: a bucket of one key in one day never nears 2^31 calls, and PostgreSQL
        # sums INTEGER in a bigint where it sums BIGINT in a slower numeric.
        *(
            Column(column, Integer, nullable=False, default=0, server_default=ZERO)
            for column in BUCKET_COLUMNS
        ),
        UniqueConstraint(period, "provider", "model", "operation", "kind", name=f"uq_{name}_key"),
    )


telemetry_hourly_histogram = _histogram_table("telemetry_hourly_histogram", "hour")
telemetry_daily_histogram = _histogram_table("telemetry_daily_histogram", "day")
HOURLY_HISTOGRAM_KEY: tuple[str, ...] = ("hour", "provider", "model", "operation", "kind")
DAILY_HISTOGRAM_KEY: tuple[str, ...] = ("day", "provider", "model", "operation", "kind")
