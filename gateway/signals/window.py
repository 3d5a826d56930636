"""How a read window splits between the telemetry rows and the rollup's hours and days.

A window of rows stamped from ``since`` on (``[since, now]`` and any row stamped
after ``now``) is read as: the rows of ``[since, first_hour)``, the part of the first
hour inside the window; the rollup's hours ``[first_hour, first_day)``, up to the
first midnight; and the rollup's days from ``first_day`` on, the current day (and
any later one) included. Every hour and day the rollup holds sums exactly the rows
of that hour or day still in telemetry, written in the same transaction
(docs/telemetry.md#telemetry_hourly), so the parts together are the window's rows,
counted once each: at most an hour of rows, 23 hours and a day per day of the
window.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, bindparam

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
HALF_DAY = timedelta(hours=12)

Range = tuple[datetime, datetime]
Bound = datetime | ColumnElement[Any]  # a moment, or a bind parameter standing for one


@dataclass(frozen=True, slots=True)
class WindowSplit:
    since: datetime
    first_hour: datetime  # rows before it; rollup hours from it ...
    first_day: datetime  # ... to it; rollup days from it on

    @property
    def rows(self) -> Range | None:
        """The rows read from telemetry: the window's part of its first hour."""
        return (self.since, self.first_hour) if self.since < self.first_hour else None

    @property
    def hours(self) -> Range | None:
        """The hours read from the hour level, up to the first midnight."""
        return (self.first_hour, self.first_day) if self.first_hour < self.first_day else None


def _ceil(moment: datetime, floor: datetime, step: timedelta) -> datetime:
    return floor if floor >= moment else floor + step


def split_window(since: datetime) -> WindowSplit:
    """The parts of the window of rows stamped from ``since`` on."""
    since = since.astimezone(UTC)
    first_hour = _ceil(since, since.replace(minute=0, second=0, microsecond=0), HOUR)
    first_day = _ceil(first_hour, first_hour.replace(hour=0), DAY)
    return WindowSplit(since, first_hour, first_day)


@dataclass(frozen=True, slots=True)
class Part:
    """One read of a window: ``source`` is ``rows``, ``hours`` or ``days``."""

    source: str
    start: datetime
    end: datetime | None  # None: no upper bound
    sign: int = 1  # -1: counts taken away (see counting_parts)

    def params(self, index: int = 0) -> dict[str, datetime]:
        """The values of the bind parameters ``marks(..., index)`` names."""
        start = {f"start{index}": self.start}
        return start if self.end is None else {**start, f"end{index}": self.end}

    @property
    def shape(self) -> tuple[str, bool]:
        """What a statement built once for this part depends on."""
        return self.source, self.end is not None


def parts(split: WindowSplit) -> list[Part]:
    out = [Part("rows", *split.rows)] if split.rows else []
    if split.hours:
        out.append(Part("hours", *split.hours))
    out.append(Part("days", split.first_day, None))
    return out


def counting_parts(split: WindowSplit) -> list[Part]:
    """The parts for counts (the latency histograms). Counts are integers, so a part may
    be read as a larger one minus its complement, exactly: the rows of the window's part
    of its first hour, when that is more than half the hour, are that whole hour minus
    the rows before ``since``; and more than 12 hours before the first midnight are that
    whole day minus its hours before them. At most 30 minutes of rows and 12 hours are
    read."""
    out: list[Part] = []
    hours_from = split.first_hour
    if split.rows:
        hour = split.first_hour - HOUR
        if split.since - hour < split.first_hour - split.since:
            out.append(Part("rows", hour, split.since, sign=-1))
            hours_from = hour
        else:
            out.append(Part("rows", split.since, split.first_hour))
    day = split.first_day - DAY
    if split.first_day - hours_from <= HALF_DAY:
        if hours_from < split.first_day:
            out.append(Part("hours", hours_from, split.first_day))
        out.append(Part("days", split.first_day, None))
        return out
    if day < hours_from:
        out.append(Part("hours", day, hours_from, sign=-1))
    out.append(Part("days", day, None))
    return out


def rows_only(since: datetime) -> list[Part]:
    """The whole window from the rows (the reference the rollup is compared with)."""
    return [Part("rows", since, None)]


def marks(bounded: bool, index: int = 0) -> tuple[ColumnElement[Any], ColumnElement[Any] | None]:
    """The start (and end) bind parameters of the ``index``-th part of a statement built
    once for any window; Part.params fills them."""
    return bindparam(f"start{index}"), bindparam(f"end{index}") if bounded else None


def in_period(column: ColumnElement[Any], start: Bound, end: Bound | None) -> ColumnElement[bool]:
    """``start <= column`` (and ``< end``)."""
    return column >= start if end is None else and_(column >= start, column < end)
