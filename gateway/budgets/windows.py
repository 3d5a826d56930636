"""Which budgets a call is held to, and their windows (pure).

A budget line is one (scope, id, period) with its limits: a key's daily and
monthly budgets, its team's and the configuration's. Windows are the UTC day and the UTC
month. Lines come sorted, so every transaction takes counter rows in the same
order and two calls can never deadlock on them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from enum import StrEnum

from gateway.domain.model import BudgetLimits, BudgetSpec, Configuration
from gateway.domain.settings import ApiKey


class Scope(StrEnum):
    KEY = "key"
    TEAM = "team"  # every call of the team's keys
    CONFIGURATION = "configuration"


class Period(StrEnum):
    DAY = "day"
    MONTH = "month"

    @property
    def adjective(self) -> str:
        return "daily" if self is Period.DAY else "monthly"


@dataclass(frozen=True, slots=True, order=True)
class CounterKey:
    """The primary key of one ``budget_counters`` row."""

    scope: str
    scope_id: str
    period: str
    window_start: date


@dataclass(frozen=True, slots=True)
class BudgetLine:
    key: CounterKey
    limits: BudgetLimits

    @property
    def period(self) -> Period:
        return Period(self.key.period)

    @property
    def resets_at(self) -> datetime:
        return window_end(self.period, self.key.window_start)

    def describe(self) -> str:
        """``key 'alice' daily`` / ``configuration 'smart-chat' monthly``."""
        return f"{self.key.scope} '{self.key.scope_id}' {self.period.adjective}"


def window_start(period: Period, now: datetime) -> date:
    day = now.astimezone(UTC).date()
    return day if period is Period.DAY else day.replace(day=1)


def window_end(period: Period, start: date) -> datetime:
    """The first instant (UTC) of the next window."""
    if period is Period.DAY:
        following = start + timedelta(days=1)
    elif start.month == 12:
        following = date(start.year + 1, 1, 1)
    else:
        following = date(start.year, start.month + 1, 1)
    return datetime.combine(following, time(), tzinfo=UTC)


def budget_lines(
    key: ApiKey | None, configuration: Configuration, now: datetime
) -> tuple[BudgetLine, ...]:
    """Every limited budget the call is held to; empty when none applies."""
    lines: list[BudgetLine] = []
    if key is not None:
        lines.extend(_lines_of(Scope.KEY, key.id, key.budget, now))
        if key.team is not None:
            lines.extend(_lines_of(Scope.TEAM, key.team, key.team_budget, now))
    lines.extend(_lines_of(Scope.CONFIGURATION, configuration.id, configuration.budget, now))
    return tuple(sorted(lines, key=lambda line: line.key))


def _lines_of(
    scope: Scope, scope_id: str, spec: BudgetSpec | None, now: datetime
) -> list[BudgetLine]:
    if spec is None:
        return []
    found: list[BudgetLine] = []
    for period, limits in ((Period.DAY, spec.daily), (Period.MONTH, spec.monthly)):
        if limits is None or limits.unlimited:
            continue
        counter = CounterKey(scope.value, scope_id, period.value, window_start(period, now))
        found.append(BudgetLine(counter, limits))
    return found


def measures_tokens(lines: tuple[BudgetLine, ...]) -> bool:
    """Whether any line limits tokens or cost, so the call's worst case must be counted."""
    return any(line.limits.tokens or line.limits.cost for line in lines)


def iso_utc(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
