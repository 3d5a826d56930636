"""The fixed log-scale latency histogram of the hourly rollup.

See docs/telemetry.md#telemetry_hourly_latency.

Bucket 0 holds [0, 1) ms; bucket ``i`` (1 <= i < LAST) holds
[2^((i-1)/4), 2^(i/4)) ms, four buckets per doubling (each about 19 % wide);
the last bucket, ``LAST``, holds everything from 2^((LAST-1)/4) ms (about 7.8
hours) up. The edges never change: rows written by any version of the
gateway land in the same buckets, so hours can always be added together.

A percentile is read from the counts the same way whatever database holds
them: the nearest-rank bucket (the first whose running count reaches
``ceil(p * n / 100)``), reported as its geometric middle ``2^((2i-1)/8)`` ms (0.5 ms
for bucket 0, the lower edge for the last), so it is within about 9 % of the
exact value.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Mapping

PER_DOUBLING = 4
LAST = 100  # buckets 0..LAST
EDGES: tuple[float, ...] = tuple(2.0 ** (i / PER_DOUBLING) for i in range(LAST))


def bucket_of(latency_ms: float) -> int:
    """The bucket a latency falls in (a negative or NaN latency falls in bucket 0)."""
    if not latency_ms > 0.0:
        return 0
    return bisect_right(EDGES, latency_ms)


def bucket_bounds(bucket: int) -> tuple[float, float]:
    """[lower, upper) in milliseconds; the last bucket's upper bound is infinity."""
    if bucket <= 0:
        return 0.0, EDGES[0]
    if bucket >= LAST:
        return EDGES[LAST - 1], math.inf
    return EDGES[bucket - 1], EDGES[bucket]


def bucket_value(bucket: int) -> float:
    """The value a percentile that falls in ``bucket`` reports."""
    if bucket <= 0:
        return 0.5
    if bucket >= LAST:
        return EDGES[LAST - 1]
    return float(2.0 ** ((2 * bucket - 1) / (2 * PER_DOUBLING)))


def percentile(counts: Mapping[int, int], percent: int) -> float | None:
    """The nearest-rank ``percent``-th percentile (1..100) of a histogram; None when empty."""
    total = sum(counts.values())
    if total <= 0:
        return None
    rank = max(1, -(-percent * total // 100))  # ceil in integers: 0.9 * 10 is not 9 in floats
    running = 0
    for bucket in sorted(counts):
        running += counts[bucket]
        if running >= rank:
            return bucket_value(bucket)
    return bucket_value(max(counts))  # unreachable: the running count reaches the total
