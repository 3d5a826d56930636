"""telemetry.trace_id: the call's OpenTelemetry trace, when telemetry.otel traced it.

Revision ID: 0013
Revises: 0008
Create Date: 2026-12-04

32 hex digits (W3C trace-id), NULL for calls not traced (tracing off, or not sampled), and
for every call already recorded. Indexed: a trace links to its call by this column.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("telemetry", sa.Column("trace_id", sa.String(32), nullable=True))
    op.create_index("ix_telemetry_trace_id", "telemetry", ["trace_id"])


def downgrade() -> None:
    op.drop_index("ix_telemetry_trace_id", table_name="telemetry")
    op.drop_column("telemetry", "trace_id")
