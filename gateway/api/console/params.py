"""Admin and console parameters read into values every database can hold, or refused.

A value outside what SQLite, PostgreSQL and MariaDB all take would fail in the driver
(an id past a signed 64-bit integer, text with a NUL character) or before it (a
date-time whose conversion to UTC leaves the calendar): each is a 400 naming the
parameter instead of a 500.
"""

from __future__ import annotations

from datetime import UTC, datetime

from gateway.domain.errors import InvalidRequest

MAX_ID = (1 << 63) - 1  # BIGINT's largest value, the ids' column on PostgreSQL and MariaDB


def call_id(value: int | str | None, name: str) -> int | None:
    """A call id from 0 to ``MAX_ID``: from the path (an int already) or a query string."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        if not value.isascii() or not value.isdigit():
            raise InvalidRequest(f"'{name}' must be a call id.", param=name)
        value = int(value) if len(value) <= 19 else MAX_ID + 1
    if not 0 <= value <= MAX_ID:
        raise InvalidRequest(f"'{name}' must be a call id from 0 to {MAX_ID}.", param=name)
    return value


def moment(value: str | None, name: str) -> datetime | None:
    """An ISO date-time (``datetime-local`` sends ``2026-12-01T09:30``), read as UTC; a naive
    one is UTC already."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidRequest(f"'{name}' must be an ISO date-time.", param=name) from None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00+14:00 is in year 0 in UTC
        raise InvalidRequest(
            f"'{name}' in UTC is outside the years 1 to 9999.", param=name
        ) from None


def text(value: str | None, name: str) -> str | None:
    """A filter's text: PostgreSQL's text holds no NUL character (its driver fails)."""
    if not value:
        return None
    if "\x00" in value:
        raise InvalidRequest(f"'{name}' must not contain a NUL character.", param=name)
    return value
