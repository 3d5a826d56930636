"""The in-memory aggregation of a batch into usage_daily increments (pure)."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from decimal import Decimal

from gateway.telemetry.usage_daily import usage_increments
from tests.unit.telemetry.factory import make_record


def test_one_increment_per_key_with_exact_sums() -> None:
    increments = usage_increments(
        [
            make_record(actual_input_tokens=3, actual_output_tokens=4, actual_cost=Decimal("0.1")),
            make_record(actual_input_tokens=None, estimated_cost=Decimal("0.2")),
            make_record(actual_cost=Decimal("0.2")),
        ]
    )
    [only] = increments
    assert only["requests"] == 3
    assert (only["input_tokens"], only["output_tokens"]) == (3, 4)
    assert only["cost"] == Decimal("0.3")
    assert only["estimated_cost"] == Decimal("0.2")


def test_calls_nothing_answered_are_not_counted() -> None:
    assert usage_increments([make_record(served_provider=None, served_model=None)]) == []


def test_the_day_is_the_utc_day_of_the_call() -> None:
    late_evening_west = datetime(2026, 11, 29, 23, 30, tzinfo=timezone(timedelta(hours=-2)))
    [only] = usage_increments([make_record(created_at=late_evening_west)])
    assert only["day"] == date(2026, 11, 30)


def test_increments_are_sorted_by_key_so_writers_lock_in_one_order() -> None:
    records = [make_record(served_model=name) for name in ("b", "c", "a", "b")]
    assert [row["model"] for row in usage_increments(records)] == ["a", "b", "c"]


def test_absent_key_parts_are_empty_strings_not_null() -> None:
    [only] = usage_increments([make_record(api_key_id=None, served_provider=None)])
    assert (only["api_key_id"], only["provider"]) == ("", "")
