"""telemetry.routing_explored: the call was sent where routing.exploration chose.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02

A flag like the routing_signal_* ones: 0 for every call already recorded.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "telemetry",
        sa.Column(
            "routing_explored", sa.SmallInteger(), nullable=False, server_default=sa.text("0")
        ),
    )


def downgrade() -> None:
    op.drop_column("telemetry", "routing_explored")
