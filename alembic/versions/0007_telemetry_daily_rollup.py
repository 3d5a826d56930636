"""The rollup's day level and its one-row-per-key latency histograms, filled from the hours.

Revision ID: 0007
Revises: 0004
Create Date: 2026-12-02

``telemetry_daily`` (the counters of ``telemetry_hourly`` per UTC day),
``telemetry_hourly_histogram`` and ``telemetry_daily_histogram`` (the counts of
``telemetry_hourly_latency`` with a column per bucket, per hour and per day) are spelled
out here (docs/telemetry.md#telemetry_daily). The backfill
(gateway.telemetry.backfill.backfill_levels) derives them from the hourly rollup a day at
a time with the function the telemetry writer runs on every batch.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0007"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_TIME = sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
MONEY = sa.Numeric(18, 10)
ZERO = sa.text("0")
EMPTY = sa.text("''")
BUCKETS = 101  # 0..100, gateway.routing.latency_buckets (fixed forever)

DAILY_KEY = [
    ("configuration", 128),
    ("api_key_id", 128),
    ("provider", 128),
    ("model", 191),
    ("operation", 16),
    ("mode", 32),
    ("attempted_provider", 128),
]
COUNTS = [
    "calls",
    "successes",
    "errors",
    "cache_hits",
    "streams",
    "fallbacks",
    "input_tokens",
    "output_tokens",
]
DAILY_COUNTERS: list[tuple[str, sa.types.TypeEngine[object]]] = [
    *((name, sa.BigInteger()) for name in COUNTS),
    ("cost", MONEY),
    ("priced_calls", sa.BigInteger()),
    ("estimated_cost", MONEY),
    ("latency_sum_ms", sa.Double()),
    ("ttft_sum_ms", sa.Double()),
    ("ttft_calls", sa.BigInteger()),
    ("history_calls", sa.BigInteger()),
    ("history_latency_sum_ms", sa.Double()),
    ("history_ttft_sum_ms", sa.Double()),
    ("history_ttft_calls", sa.BigInteger()),
    ("history_costed_calls", sa.BigInteger()),
    ("history_cost", MONEY),
    ("health_samples", sa.BigInteger()),
    ("health_successes", sa.BigInteger()),
    ("health_latency_sum_ms", sa.Double()),
    ("health_latency_calls", sa.BigInteger()),
]


def _key(name: str, length: int) -> sa.Column[str]:
    return sa.Column(name, sa.String(length), nullable=False, server_default=EMPTY)


def _histogram(name: str, period: str) -> None:
    op.create_table(
        name,
        sa.Column(period, UTC_TIME, nullable=False),
        _key("provider", 128),
        _key("model", 191),
        _key("operation", 16),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("calls", sa.BigInteger(), nullable=False, server_default=ZERO),
        *(
            sa.Column(f"b{i}", sa.Integer(), nullable=False, server_default=ZERO)
            for i in range(BUCKETS)
        ),
        sa.UniqueConstraint(
            period, "provider", "model", "operation", "kind", name=f"uq_{name}_key"
        ),
    )


def upgrade() -> None:
    op.create_table(
        "telemetry_daily",
        sa.Column("day", UTC_TIME, nullable=False),
        *(_key(name, length) for name, length in DAILY_KEY),
        *(
            sa.Column(name, kind, nullable=False, server_default=ZERO)
            for name, kind in DAILY_COUNTERS
        ),
        sa.UniqueConstraint("day", *(name for name, _ in DAILY_KEY), name="uq_telemetry_daily_key"),
    )
    _histogram("telemetry_hourly_histogram", "hour")
    _histogram("telemetry_daily_histogram", "day")
    # Imported here: only the upgrade needs the gateway's own aggregation.
    from gateway.telemetry.backfill import backfill_levels

    backfill_levels(op.get_bind())


def downgrade() -> None:
    op.drop_table("telemetry_daily_histogram")
    op.drop_table("telemetry_hourly_histogram")
    op.drop_table("telemetry_daily")
