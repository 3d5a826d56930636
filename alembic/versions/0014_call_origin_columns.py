"""telemetry.inbound_api, telemetry.ignored_params, telemetry.price_source.

Revision ID: 0014
Revises: 0012
Create Date: 2026-12-04

Three facts about a call that its row did not hold, all NULL for rows already recorded:

- ``inbound_api``: the API the client called in by (``chat``, ``responses``, ``messages``,
  ``completions``, ``embeddings``), so one model's call history stays one population
  whichever API a call came by, and the row still tells them apart.
- ``ignored_params``: the request fields the gateway accepted but could not pass to the
  serving provider (comma-separated, as in the ``x-gateway-ignored-params`` header).
- ``price_source``: where the price of the serving model came from (``config``, or
  ``catalog:<data version>`` for the built-in price catalog).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("telemetry", sa.Column("inbound_api", sa.String(16), nullable=True))
    op.add_column("telemetry", sa.Column("ignored_params", sa.Text(), nullable=True))
    op.add_column("telemetry", sa.Column("price_source", sa.String(64), nullable=True))


def downgrade() -> None:
    op.drop_column("telemetry", "price_source")
    op.drop_column("telemetry", "ignored_params")
    op.drop_column("telemetry", "inbound_api")
