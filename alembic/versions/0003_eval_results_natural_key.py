"""eval_results: one row per run (set, provider, model, grader, run_at).

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01

Importing the same results twice must not count a run twice, so the natural key gets
a unique index. Rows that an earlier double import left behind are removed first,
keeping the oldest of each run (the derived table lets MariaDB read the table it
deletes from).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NATURAL_KEY = ["set_id", "provider", "model", "grader", "run_at"]


def upgrade() -> None:
    columns = ", ".join(NATURAL_KEY)
    op.execute(
        sa.text(
            "DELETE FROM eval_results WHERE id NOT IN ("
            f"SELECT id FROM (SELECT MIN(id) AS id FROM eval_results GROUP BY {columns}) AS kept)"
        )
    )
    op.create_index("uq_eval_results_run", "eval_results", NATURAL_KEY, unique=True)


def downgrade() -> None:
    op.drop_index("uq_eval_results_run", table_name="eval_results")
