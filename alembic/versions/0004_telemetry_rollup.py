"""The hourly telemetry rollup, filled from the rows already there; two telemetry columns.

Revision ID: 0004
Revises: 0006
Create Date: 2026-12-02

``telemetry_hourly`` and ``telemetry_hourly_latency`` (docs/telemetry.md#telemetry_hourly)
are spelled out here. The backfill (gateway.telemetry.backfill) reads the existing
telemetry rows a day at a time and aggregates them with the function the telemetry
writer runs on every batch, so a backfilled hour equals a written one.
``output_tokens_per_second`` and ``upstream_model`` are new nullable telemetry
columns (docs/telemetry.md#telemetry); old rows keep NULL there.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0004"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_TIME = sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
MONEY = sa.Numeric(18, 10)
ZERO = sa.text("0")
EMPTY = sa.text("''")

HOURLY_KEY = [
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
HOURLY_COUNTERS: list[tuple[str, sa.types.TypeEngine[object]]] = [
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


def upgrade() -> None:
    op.create_table(
        "telemetry_hourly",
        sa.Column("hour", UTC_TIME, nullable=False),
        *(_key(name, length) for name, length in HOURLY_KEY),
        *(
            sa.Column(name, kind, nullable=False, server_default=ZERO)
            for name, kind in HOURLY_COUNTERS
        ),
        sa.UniqueConstraint(
            "hour", *(name for name, _ in HOURLY_KEY), name="uq_telemetry_hourly_key"
        ),
    )
    op.create_table(
        "telemetry_hourly_latency",
        sa.Column("hour", UTC_TIME, nullable=False),
        _key("provider", 128),
        _key("model", 191),
        _key("operation", 16),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("bucket", sa.SmallInteger(), nullable=False),
        sa.Column("calls", sa.BigInteger(), nullable=False, server_default=ZERO),
        sa.UniqueConstraint(
            "hour",
            "provider",
            "model",
            "operation",
            "kind",
            "bucket",
            name="uq_telemetry_hourly_latency_key",
        ),
    )
    op.add_column("telemetry", sa.Column("output_tokens_per_second", sa.Double(), nullable=True))
    op.add_column("telemetry", sa.Column("upstream_model", sa.String(255), nullable=True))
    _history_index(with_ttft=True)
    _backfill(op.get_bind())


HISTORY_INDEX = [
    "created_at",
    "served_provider",
    "served_model",
    "operation",
    "success",
    "fallback_attempts",
    "cache_hit",
    "latency_ms",
    "actual_cost",
]


def _history_index(*, with_ttft: bool) -> None:
    """The call-history read's covering index gains time_to_first_token_ms (stream ranking)."""
    op.drop_index("ix_telemetry_call_history", table_name="telemetry")
    columns = [*HISTORY_INDEX, "time_to_first_token_ms"] if with_ttft else HISTORY_INDEX
    op.create_index("ix_telemetry_call_history", "telemetry", columns)


def _backfill(connection: sa.Connection) -> None:
    # Imported here: only the upgrade needs the gateway's own aggregation.
    from gateway.telemetry.backfill import backfill_rollup

    backfill_rollup(connection)


def downgrade() -> None:
    _history_index(with_ttft=False)
    with op.batch_alter_table("telemetry") as batch:
        batch.drop_column("upstream_model")
        batch.drop_column("output_tokens_per_second")
    op.drop_table("telemetry_hourly_latency")
    op.drop_table("telemetry_hourly")
