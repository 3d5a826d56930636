"""How a read window splits between the hourly rollup and the telemetry rows.

A window ``[since, now]`` (and any row stamped after ``now``) is read as:
rows in ``[since, first_hour)``, the rollup's whole hours ``[first_hour,
last_hour)``, and rows from ``last_hour`` on (the current hour). Every hour the
rollup holds sums exactly the rows of that hour still in telemetry
(docs/telemetry.md#telemetry_hourly), so the three parts together are the
window's rows, counted once each.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

HOUR = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class WindowSplit:
    since: datetime
    first_hour: datetime  # rollup hours from here (inclusive) ...
    last_hour: datetime  # ... to here (exclusive); rows from here on

    @property
    def has_rollup(self) -> bool:
        return self.first_hour < self.last_hour


def _floor_hour(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def split_window(since: datetime, now: datetime) -> WindowSplit:
    """The parts of ``[since, now]``; without a whole hour inside it, all of it is rows."""
    first = _floor_hour(since)
    if first < since:
        first += HOUR
    last = _floor_hour(now)
    if last <= first:
        return WindowSplit(since, since, since)  # no rollup: rows from ``since`` on
    return WindowSplit(since, first, last)
