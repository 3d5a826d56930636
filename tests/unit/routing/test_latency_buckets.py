"""The fixed log-scale histogram (docs/telemetry.md#telemetry_hourly_latency) and its
percentiles (docs/routing.md#latency-statistic)."""

from __future__ import annotations

import math
import random

import pytest

from gateway.routing.latency_buckets import (
    LAST,
    bucket_bounds,
    bucket_of,
    bucket_value,
    percentile,
)


@pytest.mark.parametrize(
    ("latency", "bucket"),
    [
        (0.0, 0),
        (-3.0, 0),
        (math.nan, 0),
        (0.999, 0),
        (1.0, 1),
        (1.18, 1),
        (2.0, 5),
        (200.0, 31),
        (1722.1558584396073, 44),
        (60000.0, 64),
        (1e12, LAST),
    ],
)
def test_documented_buckets(latency: float, bucket: int) -> None:
    assert bucket_of(latency) == bucket


def test_every_latency_falls_inside_its_bucket() -> None:
    rng = random.Random(5)
    for _ in range(5000):
        latency = rng.lognormvariate(5.0, 3.0)
        low, high = bucket_bounds(bucket_of(latency))
        assert low <= latency < high


def test_buckets_are_four_per_doubling_and_contiguous() -> None:
    assert bucket_bounds(31) == pytest.approx((181.019, 215.269), abs=1e-3)
    for bucket in range(LAST):
        assert bucket_bounds(bucket)[1] == bucket_bounds(bucket + 1)[0]
    assert bucket_bounds(LAST)[1] == math.inf


def test_a_percentile_reports_the_buckets_geometric_middle() -> None:
    low, high = bucket_bounds(31)
    assert bucket_value(31) == pytest.approx(math.sqrt(low * high))
    assert percentile({31: 1}, 50) == bucket_value(31)
    assert bucket_value(0) == 0.5
    assert bucket_value(LAST) == bucket_bounds(LAST)[0]


def test_one_very_slow_call_does_not_move_the_median() -> None:
    fast = {bucket_of(200.0): 9}
    with_outlier = {bucket_of(200.0): 9, bucket_of(60000.0): 1}
    assert percentile(with_outlier, 50) == percentile(fast, 50) == pytest.approx(197.403, 1e-4)
    assert percentile(with_outlier, 90) == percentile(fast, 90)
    two_slow = {bucket_of(200.0): 8, bucket_of(60000.0): 2}
    assert percentile(two_slow, 50) == percentile(fast, 50)
    assert percentile(two_slow, 90) == pytest.approx(60096.777, 1e-4)


def test_nearest_rank_is_computed_in_integers() -> None:
    # 0.9 * 10 is 9.000000000000002 in floats: a float ceil would take the 10th call.
    counts = {10: 9, 60: 1}
    assert percentile(counts, 90) == bucket_value(10)
    assert percentile(counts, 100) == bucket_value(60)
    assert percentile({}, 50) is None


def test_percentiles_stay_within_a_bucket_of_the_exact_value() -> None:
    rng = random.Random(9)
    values = sorted(rng.lognormvariate(6.0, 1.0) for _ in range(1001))
    counts: dict[int, int] = {}
    for value in values:
        counts[bucket_of(value)] = counts.get(bucket_of(value), 0) + 1
    for percent in (50, 90):
        exact = values[math.ceil(percent * len(values) / 100) - 1]
        assert percentile(counts, percent) == pytest.approx(exact, rel=0.1)
