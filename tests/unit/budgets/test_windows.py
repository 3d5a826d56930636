"""Which budgets hold a call, and when their windows reset."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

from gateway.budgets.windows import (
    Period,
    budget_lines,
    measures_tokens,
    window_end,
    window_start,
)
from gateway.domain.model import BudgetLimits, BudgetSpec, Configuration, ConfigurationMode
from gateway.domain.settings import ApiKey

NOW = datetime(2026, 12, 31, 23, 30, tzinfo=UTC)


def _key(budget: BudgetSpec | None) -> ApiKey:
    return ApiKey(id="alice", key_hash="0" * 64, budget=budget)


def _configuration(budget: BudgetSpec | None = None) -> Configuration:
    return Configuration(id="chat", mode=ConfigurationMode.FIXED, model="small", budget=budget)


def test_daily_window_is_the_utc_day_and_resets_at_the_next_midnight() -> None:
    start = window_start(Period.DAY, NOW)
    assert start == date(2026, 12, 31)
    assert window_end(Period.DAY, start) == datetime(2027, 1, 1, tzinfo=UTC)


def test_monthly_window_is_the_utc_month_and_december_rolls_into_january() -> None:
    start = window_start(Period.MONTH, NOW)
    assert start == date(2026, 12, 1)
    assert window_end(Period.MONTH, start) == datetime(2027, 1, 1, tzinfo=UTC)
    assert window_end(Period.MONTH, date(2026, 2, 1)) == datetime(2026, 3, 1, tzinfo=UTC)


def test_window_is_taken_in_utc_whatever_the_zone_of_now() -> None:
    from datetime import timedelta, timezone

    tokyo = datetime(2027, 1, 1, 8, 0, tzinfo=timezone(timedelta(hours=9)))  # 23:00 UTC Dec 31
    assert window_start(Period.DAY, tokyo) == date(2026, 12, 31)


def test_no_budget_means_no_line_so_no_database_round_trip() -> None:
    assert budget_lines(_key(None), _configuration(), NOW) == ()
    assert budget_lines(None, _configuration(), NOW) == ()


def test_zero_or_absent_limits_are_unlimited_and_hold_nothing() -> None:
    spec = BudgetSpec(daily=BudgetLimits(requests=0, tokens=None, cost=Decimal(0)))
    assert budget_lines(_key(spec), _configuration(spec), NOW) == ()


def test_key_and_configuration_budgets_both_hold_in_a_stable_order() -> None:
    key_spec = BudgetSpec(
        daily=BudgetLimits(cost=Decimal("5.00")), monthly=BudgetLimits(requests=100)
    )
    config_spec = BudgetSpec(daily=BudgetLimits(tokens=1000))
    lines = budget_lines(_key(key_spec), _configuration(config_spec), NOW)
    described = [line.describe() for line in lines]
    assert described == [
        "configuration 'chat' daily",
        "key 'alice' daily",
        "key 'alice' monthly",
    ]
    assert lines == tuple(sorted(lines, key=lambda line: line.key))


def test_only_token_or_cost_limits_need_the_worst_case_counted() -> None:
    requests_only = budget_lines(
        _key(BudgetSpec(daily=BudgetLimits(requests=5))), _configuration(), NOW
    )
    assert not measures_tokens(requests_only)
    with_cost = budget_lines(
        _key(BudgetSpec(daily=BudgetLimits(cost=Decimal(1)))), _configuration(), NOW
    )
    assert measures_tokens(with_cost)
