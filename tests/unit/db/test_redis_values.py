"""Bounds on values read from Redis: a circuit opening is a finite time no later than now
plus the skew; a reading is dated no later than now plus the skew; skipped values are
counted every time and logged at most once a minute per source."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest

from gateway.db.redis_values import SKEW_SECONDS, SkippedValues, opening_within, taken_within

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    "value", [b"inf", b"-inf", b"nan", b"1e400", b"soon", b"\xff\xfe", repr(NOW + 3600).encode()]
)
def test_an_opening_that_is_not_a_finite_time_in_bounds_is_none(value: bytes) -> None:
    assert opening_within(value, NOW) is None


def test_an_opening_up_to_the_skew_ahead_is_taken() -> None:
    assert opening_within(repr(NOW - 10).encode(), NOW) == NOW - 10
    assert opening_within(str(NOW + SKEW_SECONDS), NOW) == NOW + SKEW_SECONDS


def test_a_reading_dated_beyond_the_skew_or_without_a_zone_is_not_usable() -> None:
    now = datetime(2030, 1, 1, tzinfo=UTC)
    assert taken_within(now - timedelta(minutes=5), now)
    assert taken_within(now + timedelta(seconds=SKEW_SECONDS), now)
    assert not taken_within(datetime(2099, 1, 1, tzinfo=UTC), now)
    assert not taken_within(datetime(2029, 12, 31), now)  # naive: whose clock?


def test_skips_are_counted_each_time_and_logged_once_a_minute_per_source(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = [100.0]
    seen: list[str] = []
    skipped = SkippedValues(seen.append, monotonic=lambda: clock[0])
    caplog.set_level(logging.WARNING, logger="gateway.db.redis_values")
    for _ in range(3):
        skipped.skip("cache", "undecodable")
    skipped.skip("circuits", "not a time")
    clock[0] += 60
    skipped.skip("cache", "undecodable")
    assert skipped.counts == {"cache": 4, "circuits": 1}
    assert seen == ["cache"] * 3 + ["circuits", "cache"]
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3
    assert lines[-1].endswith("4 skipped so far")
