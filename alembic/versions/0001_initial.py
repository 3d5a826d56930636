"""Initial schema: telemetry, usage_daily, eval_results.

Revision ID: 0001
Revises:
Create Date: 2026-11-29

Types are spelled out here rather than imported from gateway.db.tables, so this
revision keeps creating the same schema whatever the tables module becomes.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
UTC_TIME = sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
MONEY = sa.Numeric(18, 10)
ZERO = sa.text("0")
EMPTY = sa.text("''")


def _flag(name: str) -> sa.Column[int]:
    return sa.Column(name, sa.SmallInteger(), nullable=False, server_default=ZERO)


def _count(name: str) -> sa.Column[int]:
    return sa.Column(name, sa.Integer(), nullable=False, server_default=ZERO)


def _text(name: str, length: int) -> sa.Column[str]:
    return sa.Column(name, sa.String(length), nullable=False, server_default=EMPTY)


def _telemetry() -> None:
    op.create_table(
        "telemetry",
        sa.Column("id", ID, primary_key=True, autoincrement=True),
        sa.Column("created_at", UTC_TIME, nullable=False),
        sa.Column("correlation_id", sa.String(128), nullable=False),
        sa.Column("api_key_id", sa.String(128)),
        sa.Column("operation", sa.String(16), nullable=False),
        sa.Column("configuration", sa.String(128), nullable=False),
        sa.Column("provider", sa.String(128)),
        sa.Column("adapter_type", sa.String(32)),
        sa.Column("model", sa.String(191)),
        sa.Column("served_configuration", sa.String(128)),
        sa.Column("served_provider", sa.String(128)),
        sa.Column("served_model", sa.String(191)),
        sa.Column("response_model", sa.String(255)),
        sa.Column("success", sa.SmallInteger(), nullable=False),
        sa.Column("error_class", sa.String(64)),
        sa.Column("http_status", sa.Integer(), nullable=False),
        sa.Column("latency_ms", sa.Double(), nullable=False),
        sa.Column("time_to_first_token_ms", sa.Double()),
        _flag("cache_hit"),
        _count("fallback_attempts"),
        _count("provider_retries"),
        sa.Column("actual_input_tokens", sa.Integer()),
        sa.Column("actual_output_tokens", sa.Integer()),
        sa.Column("actual_cost", MONEY),
        sa.Column("usage_source", sa.String(16), nullable=False, server_default="none"),
        _text("routing_policy_mode", 32),
        _count("routing_candidates"),
        _text("routing_rejections", 512),
        _text("routing_cost_basis", 16),
        _flag("routing_signal_quality"),
        _flag("routing_signal_health"),
        _flag("routing_signal_cost"),
        _flag("routing_signal_latency"),
        _flag("routing_signal_call_cost"),
        sa.Column("estimated_input_tokens", sa.Integer()),
        sa.Column("estimated_output_tokens", sa.Integer()),
        sa.Column("estimated_cost", MONEY),
        sa.PrimaryKeyConstraint("id", name="pk_telemetry"),
    )
    op.create_index(
        "ix_telemetry_call_history",
        "telemetry",
        [
            "created_at",
            "served_provider",
            "served_model",
            "operation",
            "success",
            "fallback_attempts",
            "cache_hit",
            "latency_ms",
            "actual_cost",
        ],
    )
    op.create_index("ix_telemetry_health_window", "telemetry", ["created_at", "provider"])


def _usage_daily() -> None:
    op.create_table(
        "usage_daily",
        sa.Column("id", ID, primary_key=True, autoincrement=True),
        sa.Column("day", sa.Date(), nullable=False),
        _text("api_key_id", 128),
        _text("configuration", 128),
        _text("provider", 128),
        _text("model", 191),
        _text("operation", 16),
        sa.Column("requests", sa.BigInteger(), nullable=False, server_default=ZERO),
        sa.Column("input_tokens", sa.BigInteger(), nullable=False, server_default=ZERO),
        sa.Column("output_tokens", sa.BigInteger(), nullable=False, server_default=ZERO),
        sa.Column("cost", MONEY, nullable=False, server_default=ZERO),
        sa.Column("estimated_cost", MONEY, nullable=False, server_default=ZERO),
        sa.PrimaryKeyConstraint("id", name="pk_usage_daily"),
        sa.UniqueConstraint(
            "day",
            "api_key_id",
            "configuration",
            "provider",
            "model",
            "operation",
            name="uq_usage_daily_key",
        ),
    )


def _eval_results() -> None:
    op.create_table(
        "eval_results",
        sa.Column("id", ID, primary_key=True, autoincrement=True),
        sa.Column("set_id", sa.String(128), nullable=False),
        sa.Column("provider", sa.String(128), nullable=False),
        sa.Column("model", sa.String(191), nullable=False),
        sa.Column("grader", sa.String(64), nullable=False, server_default="deterministic"),
        sa.Column("prompt_count", sa.Integer(), nullable=False),
        sa.Column("passed_count", sa.Integer(), nullable=False),
        sa.Column("mean_score", sa.Double(), nullable=False),
        sa.Column("run_at", UTC_TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_eval_results"),
    )
    op.create_index("ix_eval_results_model", "eval_results", ["provider", "model"])


def upgrade() -> None:
    _telemetry()
    _usage_daily()
    _eval_results()


def downgrade() -> None:
    op.drop_index("ix_eval_results_model", table_name="eval_results")
    op.drop_table("eval_results")
    op.drop_table("usage_daily")
    op.drop_index("ix_telemetry_health_window", table_name="telemetry")
    op.drop_index("ix_telemetry_call_history", table_name="telemetry")
    op.drop_table("telemetry")
