"""Budget counters and reservations, and the response cache.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29

Types are spelled out here rather than imported from gateway.db.budget_tables,
so this revision keeps creating the same schema whatever that module becomes.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_TIME = sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
MONEY = sa.Numeric(18, 10)
BODY = sa.LargeBinary().with_variant(mysql.LONGBLOB(), "mysql", "mariadb")
ZERO = sa.text("0")


def _scope_columns() -> list[sa.Column[object]]:
    return [
        sa.Column("scope", sa.String(16), nullable=False),
        sa.Column("scope_id", sa.String(128), nullable=False),
        sa.Column("period", sa.String(8), nullable=False),
        sa.Column("window_start", sa.Date(), nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "budget_counters",
        *_scope_columns(),
        sa.Column("requests", sa.BigInteger(), nullable=False, server_default=ZERO),
        sa.Column("tokens", sa.BigInteger(), nullable=False, server_default=ZERO),
        sa.Column("cost", MONEY, nullable=False, server_default=ZERO),
        sa.PrimaryKeyConstraint(
            "scope", "scope_id", "period", "window_start", name="pk_budget_counters"
        ),
    )
    op.create_table(
        "budget_reservations",
        sa.Column("reservation_id", sa.String(32), nullable=False),
        sa.Column("line", sa.Integer(), nullable=False),
        *_scope_columns(),
        sa.Column("requests", sa.BigInteger(), nullable=False),
        sa.Column("tokens", sa.BigInteger(), nullable=False),
        sa.Column("cost", MONEY, nullable=False),
        sa.Column("expires_at", UTC_TIME, nullable=False),
        sa.PrimaryKeyConstraint("reservation_id", "line", name="pk_budget_reservations"),
    )
    op.create_index("ix_budget_reservations_expires_at", "budget_reservations", ["expires_at"])
    op.create_table(
        "response_cache",
        sa.Column("cache_key", sa.String(64), nullable=False),
        sa.Column("body", BODY, nullable=False),
        sa.Column("response_model", sa.String(255)),
        sa.Column("expires_at", UTC_TIME, nullable=False),
        sa.PrimaryKeyConstraint("cache_key", name="pk_response_cache"),
    )
    op.create_index("ix_response_cache_expires_at", "response_cache", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_response_cache_expires_at", table_name="response_cache")
    op.drop_table("response_cache")
    op.drop_index("ix_budget_reservations_expires_at", table_name="budget_reservations")
    op.drop_table("budget_reservations")
    op.drop_table("budget_counters")
