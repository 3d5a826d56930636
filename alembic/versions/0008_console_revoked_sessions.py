"""console_revoked_sessions: console sessions signed out before they expired.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-03

One row per signed-out session: its id (the session token's nonce) and the session's
own expiry, so that every process refuses a cookie replayed after sign-out
(gateway.db.console_tables, docs/console.md#sign-in). Rows past their expiry are
deleted by the next sign-out.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_TIME = sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "console_revoked_sessions",
        sa.Column("session_id", sa.String(64), nullable=False),
        sa.Column("expires_at", UTC_TIME, nullable=False),
        sa.PrimaryKeyConstraint("session_id", name="pk_console_revoked_sessions"),
    )
    op.create_index(
        "ix_console_revoked_sessions_expires_at", "console_revoked_sessions", ["expires_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_console_revoked_sessions_expires_at", table_name="console_revoked_sessions")
    op.drop_table("console_revoked_sessions")
