"""Every budget's current window: limits, what is used (and held), when it resets.

For the console's Budgets and keys view (docs/console.md). Reads ``budget_counters``
for the windows in force now; a window no call has touched yet has used nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import select, tuple_
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.budgets.windows import (
    BudgetLine,
    CounterKey,
    Period,
    Scope,
    iso_utc,
    window_start,
)
from gateway.db.budget_tables import budget_counters
from gateway.domain.model import BudgetSpec
from gateway.domain.settings import ApiKey, GatewayConfig, Team


def lines_in_force(
    config: GatewayConfig,
    now: datetime,
    keys: Sequence[ApiKey] | None = None,
    teams: Sequence[Team] | None = None,
) -> list[BudgetLine]:
    """Each limited budget of each key, team and configuration, in the window of ``now``
    (``keys`` and ``teams``: the directory's, file and database; the file's by default)."""
    owners: list[tuple[Scope, str, BudgetSpec | None]] = [
        (Scope.KEY, key.id, key.budget) for key in (config.auth.keys if keys is None else keys)
    ]
    owners.extend(
        (Scope.TEAM, team.id, team.budget) for team in (config.teams if teams is None else teams)
    )
    owners.extend((Scope.CONFIGURATION, c.id, c.budget) for c in config.configurations.values())
    lines: list[BudgetLine] = []
    for scope, owner, spec in owners:
        if spec is None:
            continue
        for period, limits in ((Period.DAY, spec.daily), (Period.MONTH, spec.monthly)):
            if limits is None or limits.unlimited:
                continue
            start = window_start(period, now)
            lines.append(BudgetLine(CounterKey(scope.value, owner, period.value, start), limits))
    return lines


async def budget_overview(
    engine: AsyncEngine,
    config: GatewayConfig,
    now: datetime,
    keys: Sequence[ApiKey] | None = None,
    teams: Sequence[Team] | None = None,
) -> list[dict[str, Any]]:
    lines = lines_in_force(config, now, keys, teams)
    used: dict[CounterKey, tuple[int, int, Decimal]] = {}
    if lines:
        c = budget_counters.c
        wanted = [(k.scope, k.scope_id, k.period, k.window_start) for k in (x.key for x in lines)]
        query = select(c.scope, c.scope_id, c.period, c.window_start, c.requests, c.tokens, c.cost)
        query = query.where(tuple_(c.scope, c.scope_id, c.period, c.window_start).in_(wanted))
        async with engine.connect() as connection:
            for row in (await connection.execute(query)).all():
                key = CounterKey(row[0], row[1], row[2], row[3])
                used[key] = (int(row[4]), int(row[5]), Decimal(str(row[6])))
    found: list[dict[str, Any]] = []
    for line in lines:
        requests, tokens, cost = used.get(line.key, (0, 0, Decimal(0)))
        limits = line.limits
        measures = []
        for name, limit, value in (
            ("requests", limits.requests, requests),
            ("tokens", limits.tokens, tokens),
            ("cost", limits.cost, cost),
        ):
            if limit:
                measures.append(
                    {
                        "measure": name,
                        "used": str(value.normalize()) if isinstance(value, Decimal) else value,
                        "limit": str(limit) if isinstance(limit, Decimal) else limit,
                        "fraction": float(value) / float(limit),
                    }
                )
        found.append(
            {
                "scope": line.key.scope,
                "id": line.key.scope_id,
                "period": line.key.period,
                "windowStart": line.key.window_start.isoformat(),
                "resetsAt": iso_utc(line.resets_at),
                "measures": measures,
            }
        )
    return found
