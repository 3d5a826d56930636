"""What a key is served as: its configurations met with its team's, the team's budget beside
its own; budgets and rate limits round-trip through their stored documents."""

from __future__ import annotations

from decimal import Decimal

from gateway.domain.limits import RateLimit
from gateway.domain.model import BudgetLimits, BudgetSpec
from gateway.domain.settings import Team
from gateway.governance.documents import (
    StoredKey,
    budget_document,
    budget_from,
    effective,
    rate_limit_document,
    rate_limit_from,
)

BUDGET = BudgetSpec(daily=BudgetLimits(requests=3, cost=Decimal("1.50")))


def test_a_keys_configurations_are_met_with_its_teams() -> None:
    team = Team(id="t", configurations=frozenset({"chat", "embed"}), budget=BUDGET)
    own = StoredKey(id="k", digest="d", team="t", configurations=frozenset({"chat", "other"}))
    served = effective(own, team)
    assert served.configurations == frozenset({"chat"})
    assert served.team == "t" and served.team_budget == BUDGET and served.budget is None
    anything = effective(StoredKey(id="k", digest="d", team="t"), team)
    assert anything.configurations == team.configurations
    assert effective(own, Team(id="t")).configurations == own.configurations


def test_budgets_and_rate_limits_round_trip_through_their_documents() -> None:
    assert budget_document(BUDGET) == {"daily": {"requests": 3, "cost": "1.5"}}
    assert budget_from(budget_document(BUDGET)) == BudgetSpec(
        daily=BudgetLimits(requests=3, cost=Decimal("1.5"))
    )
    limit = RateLimit(requests_per_minute=100, concurrent=5)
    assert rate_limit_document(limit) == {"requestsPerMinute": 100, "concurrent": 5}
    assert rate_limit_from(rate_limit_document(limit)) == limit
    assert rate_limit_from({}) is None and budget_from(None) is None
