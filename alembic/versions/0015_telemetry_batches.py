"""telemetry_batches: the keys of the telemetry batches already written.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-04

The telemetry writer inserts a batch's key in the transaction that writes its rows and
their usage_daily and rollup increments; a batch sent again (the writer process restarted
before acknowledging it, a commit whose answer was lost) finds its key and writes nothing
(docs/telemetry.md#telemetry_batches). Retention deletes keys older than a day.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_TIME = sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "telemetry_batches",
        sa.Column("batch_key", sa.String(80), nullable=False),
        sa.Column("written_at", UTC_TIME, nullable=False),
        sa.PrimaryKeyConstraint("batch_key", name="pk_telemetry_batches"),
    )
    op.create_index("ix_telemetry_batches_written_at", "telemetry_batches", ["written_at"])


def downgrade() -> None:
    op.drop_index("ix_telemetry_batches_written_at", table_name="telemetry_batches")
    op.drop_table("telemetry_batches")
