"""How a read window splits between rows and rollup hours (gateway.signals.window)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gateway.signals.window import split_window

NOW = datetime(2026, 12, 2, 10, 25, 7, tzinfo=UTC)


def test_a_week_takes_its_whole_hours_from_the_rollup() -> None:
    split = split_window(NOW - timedelta(days=7), NOW)
    assert split.has_rollup
    assert split.first_hour == datetime(2026, 11, 25, 11, tzinfo=UTC)
    assert split.last_hour == datetime(2026, 12, 2, 10, tzinfo=UTC)


def test_a_window_starting_on_the_hour_has_no_head_of_rows() -> None:
    now = datetime(2026, 12, 2, 10, tzinfo=UTC)
    split = split_window(now - timedelta(days=1), now)
    assert split.first_hour == split.since == datetime(2026, 12, 1, 10, tzinfo=UTC)
    assert split.last_hour == now


def test_fifteen_minutes_are_all_rows() -> None:
    split = split_window(NOW - timedelta(seconds=900), NOW)
    assert not split.has_rollup
    assert split.since == NOW - timedelta(seconds=900)


def test_a_window_across_one_hour_boundary_only_is_all_rows() -> None:
    split = split_window(NOW - timedelta(minutes=50), NOW)
    assert not split.has_rollup
