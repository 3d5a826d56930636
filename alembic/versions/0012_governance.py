"""Keys and teams at runtime: managed_keys, managed_teams, admin_audit, governance_changes;
team_id on telemetry and usage_daily.

Revision ID: 0012
Revises: 0013
Create Date: 2026-12-04

See gateway.db.governance_tables and docs/operations.md, "Keys and teams at runtime".
``usage_daily``'s unique key gains ``team_id`` ('' for a key without a team, as every row
written before this migration): on SQLite the table is rebuilt for that (batch mode).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0012"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_TIME = sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
ID_LEN = 128
OLD_KEY = ["day", "api_key_id", "configuration", "provider", "model", "operation"]


def upgrade() -> None:
    op.create_table(
        "managed_teams",
        sa.Column("id", sa.String(ID_LEN), nullable=False),
        sa.Column("created_at", UTC_TIME, nullable=False),
        sa.Column("configurations", sa.Text()),
        sa.Column("budget", sa.Text()),
        sa.Column("rate_limit", sa.Text()),
        sa.Column("metadata", sa.Text()),
        sa.PrimaryKeyConstraint("id", name="pk_managed_teams"),
    )
    op.create_table(
        "managed_keys",
        sa.Column("id", sa.String(ID_LEN), nullable=False),
        sa.Column("team_id", sa.String(ID_LEN)),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("prefix", sa.String(16), nullable=False),
        sa.Column("created_at", UTC_TIME, nullable=False),
        sa.Column("expires_at", UTC_TIME),
        sa.Column("revoked_at", UTC_TIME),
        sa.Column("last_used_at", UTC_TIME),
        sa.Column("configurations", sa.Text()),
        sa.Column("budget", sa.Text()),
        sa.Column("rate_limit", sa.Text()),
        sa.Column("metadata", sa.Text()),
        sa.Column("previous_digest", sa.String(64)),
        sa.Column("previous_expires_at", UTC_TIME),
        sa.PrimaryKeyConstraint("id", name="pk_managed_keys"),
        sa.UniqueConstraint("digest", name="uq_managed_keys_digest"),
    )
    op.create_index("ix_managed_keys_team_id", "managed_keys", ["team_id"])
    op.create_table(
        "admin_audit",
        sa.Column("id", BIG_ID, autoincrement=True, nullable=False),
        sa.Column("created_at", UTC_TIME, nullable=False),
        sa.Column("actor", sa.String(80), nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("target", sa.String(ID_LEN + 8), nullable=False),
        sa.Column("changes", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_admin_audit"),
    )
    changes = op.create_table(
        "governance_changes",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("version", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_governance_changes"),
    )
    op.bulk_insert(changes, [{"id": 1, "version": 0}])
    op.add_column("telemetry", sa.Column("team_id", sa.String(ID_LEN)))
    with op.batch_alter_table("usage_daily") as batch:
        batch.add_column(
            sa.Column("team_id", sa.String(ID_LEN), server_default=sa.text("''"), nullable=False)
        )
        batch.drop_constraint("uq_usage_daily_key", type_="unique")
        batch.create_unique_constraint("uq_usage_daily_key", [*OLD_KEY, "team_id"])


def downgrade() -> None:
    with op.batch_alter_table("usage_daily") as batch:
        batch.drop_constraint("uq_usage_daily_key", type_="unique")
        batch.create_unique_constraint("uq_usage_daily_key", OLD_KEY)
        batch.drop_column("team_id")
    op.drop_column("telemetry", "team_id")
    op.drop_table("governance_changes")
    op.drop_table("admin_audit")
    op.drop_index("ix_managed_keys_team_id", table_name="managed_keys")
    op.drop_table("managed_keys")
    op.drop_table("managed_teams")
