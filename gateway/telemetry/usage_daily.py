"""The ``usage_daily`` side of a telemetry batch: aggregate in memory, upsert once per key.

A row counts when something answered it (``served_model`` is set): one
request, its reported tokens (0 when unreported), its measured cost into
``cost`` and its estimated cost into ``estimated_cost``. ``configuration`` is
the one the client named (budgets are set per named configuration); provider
and model are the served ones. The increments are atomic in SQL
(``requests = usage_daily.requests + excluded.requests``), so concurrent
workers never lose an update.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date
from decimal import Decimal
from typing import Any

from sqlalchemy.engine import Dialect
from sqlalchemy.sql.dml import Insert

from gateway.db.tables import USAGE_KEY_COLUMNS, usage_daily
from gateway.db.upserts import increment
from gateway.telemetry.records import TelemetryRecord

COUNTERS: tuple[str, ...] = ("requests", "input_tokens", "output_tokens", "cost", "estimated_cost")

UsageKey = tuple[date, str, str, str, str, str, str]


def usage_increments(records: Iterable[TelemetryRecord]) -> list[dict[str, Any]]:
    """One parameter set per usage_daily key, sorted by key.

    The order matters: concurrent writers lock the same keys in the same
    order, so two workers' upserts cannot deadlock on PostgreSQL or MariaDB.
    """
    totals: dict[UsageKey, list[Any]] = {}
    for record in records:
        if record.served_model is None:
            continue
        key: UsageKey = (
            record.created_at.astimezone(UTC).date(),
            record.api_key_id or "",
            record.configuration,
            record.served_provider or "",
            record.served_model,
            record.operation,
            record.team_id or "",
        )
        sums = totals.setdefault(key, [0, 0, 0, Decimal(0), Decimal(0)])
        sums[0] += 1
        sums[1] += record.actual_input_tokens or 0
        sums[2] += record.actual_output_tokens or 0
        sums[3] += record.actual_cost or 0
        sums[4] += record.estimated_cost or 0
    return [
        dict(zip(USAGE_KEY_COLUMNS + COUNTERS, (*key, *sums), strict=True))
        for key, sums in sorted(totals.items())
    ]


def upsert_statement(dialect: Dialect) -> Insert:
    """The usage_daily upsert: ``requests = usage_daily.requests + excluded.requests``, ..."""
    return increment(dialect.name, usage_daily, USAGE_KEY_COLUMNS, COUNTERS)
