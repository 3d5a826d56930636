"""How a read window splits between rows, rollup hours and rollup days
(gateway.signals.window)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gateway.signals.window import Part, counting_parts, parts, split_window

NOW = datetime(2026, 12, 2, 10, 25, 7, tzinfo=UTC)
MIDNIGHT = datetime(2026, 12, 2, tzinfo=UTC)


def test_a_week_reads_its_first_hour_from_rows_then_hours_to_midnight_then_days() -> None:
    split = split_window(NOW - timedelta(days=7))
    assert split.rows == (NOW - timedelta(days=7), datetime(2026, 11, 25, 11, tzinfo=UTC))
    assert split.hours == (
        datetime(2026, 11, 25, 11, tzinfo=UTC),
        datetime(2026, 11, 26, tzinfo=UTC),
    )
    assert split.first_day == datetime(2026, 11, 26, tzinfo=UTC)  # to the current day, included


def test_a_window_starting_on_the_hour_reads_no_rows() -> None:
    split = split_window(datetime(2026, 12, 1, 10, tzinfo=UTC))
    assert split.rows is None
    assert split.hours == (datetime(2026, 12, 1, 10, tzinfo=UTC), datetime(2026, 12, 2, tzinfo=UTC))


def test_a_window_starting_at_midnight_is_all_days() -> None:
    split = split_window(datetime(2026, 11, 30, tzinfo=UTC))
    assert split.rows is None and split.hours is None
    assert split.first_day == datetime(2026, 11, 30, tzinfo=UTC)


def test_fifteen_minutes_are_rows_to_the_next_hour_then_empty_future_hours() -> None:
    split = split_window(NOW - timedelta(seconds=900))
    assert split.rows == (NOW - timedelta(seconds=900), datetime(2026, 12, 2, 11, tzinfo=UTC))
    assert split.hours == (datetime(2026, 12, 2, 11, tzinfo=UTC), datetime(2026, 12, 3, tzinfo=UTC))


def test_a_window_in_the_last_hour_of_a_day_reads_no_hours() -> None:
    split = split_window(datetime(2026, 12, 1, 23, 50, tzinfo=UTC))
    assert split.rows == (
        datetime(2026, 12, 1, 23, 50, tzinfo=UTC),
        datetime(2026, 12, 2, tzinfo=UTC),
    )
    assert split.hours is None
    assert split.first_day == datetime(2026, 12, 2, tzinfo=UTC)


def test_counts_over_more_than_12_hours_read_the_day_minus_its_other_hours() -> None:
    split = split_window(datetime(2026, 11, 25, 6, 44, tzinfo=UTC))  # 17 hours to midnight
    day = datetime(2026, 11, 25, tzinfo=UTC)
    seven = datetime(2026, 11, 25, 7, tzinfo=UTC)
    assert counting_parts(split) == [
        Part("rows", datetime(2026, 11, 25, 6, 44, tzinfo=UTC), seven),
        Part("hours", day, seven, sign=-1),
        Part("days", day, None),
    ]
    assert [part.source for part in parts(split)] == ["rows", "hours", "days"]


def test_counts_of_most_of_the_first_hour_read_the_hour_minus_its_first_rows() -> None:
    since = datetime(2026, 11, 25, 12, 14, tzinfo=UTC)  # 46 of the hour's 60 minutes inside
    noon = datetime(2026, 11, 25, 12, tzinfo=UTC)
    assert counting_parts(split_window(since)) == [
        Part("rows", noon, since, sign=-1),
        Part("hours", noon, datetime(2026, 11, 26, tzinfo=UTC)),
        Part("days", datetime(2026, 11, 26, tzinfo=UTC), None),
    ]


def test_counts_of_12_hours_or_fewer_and_half_an_hour_of_rows_or_less_read_them() -> None:
    split = split_window(datetime(2026, 11, 25, 12, 44, tzinfo=UTC))  # 11 hours to midnight
    assert counting_parts(split) == parts(split)
