"""telemetry.routing_detail: each call's decision detail, for the console.

Revision ID: 0005
Revises: 0003
Create Date: 2026-12-02

A JSON document per call (gateway.routing.detail): the candidates with their signal
values, weights and scores, the rejected models with their reasons, the cost basis,
what decided, the fallback chain, and the error of a failed call. Rows written
before this revision have none (NULL). An index on (configuration, id) serves the
console's Calls page filtered by configuration, newest first.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("telemetry", sa.Column("routing_detail", sa.Text(), nullable=True))
    op.create_index("ix_telemetry_configuration_id", "telemetry", ["configuration", "id"])


def downgrade() -> None:
    op.drop_index("ix_telemetry_configuration_id", table_name="telemetry")
    op.drop_column("telemetry", "routing_detail")
