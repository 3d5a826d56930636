"""The latency histogram's bucket of a column, computed by the database.

``bucket_expression(x)`` is a ``CASE`` that is, for every finite latency, the
bucket :func:`gateway.routing.latency_buckets.bucket_of` gives it: the number of
bucket edges ``<= x`` (0 for a negative latency). The edges are bound as doubles and
compared with the double column, so the comparison is the same as Python's on every
database; the ``CASE`` is a binary search (seven comparisons a row). Group by it
through a subquery: its bound edges would differ between a select list and a
``GROUP BY`` written out twice. Measured
latencies are finite: no NaN reaches the telemetry table.
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, Double, Integer, case, literal, literal_column

from gateway.routing.latency_buckets import EDGES, LAST


def _between(column: ColumnElement[float], low: int, high: int) -> ColumnElement[int]:
    if low == high:
        return literal_column(str(low), Integer)
    middle = (low + high + 1) // 2  # the bucket is >= middle exactly when x >= EDGES[middle-1]
    return case(
        (column >= literal(EDGES[middle - 1], Double), _between(column, middle, high)),
        else_=_between(column, low, middle - 1),
    )


def bucket_expression(column: ColumnElement[float]) -> ColumnElement[int]:
    return _between(column, 0, LAST)
