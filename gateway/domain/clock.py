"""The one clock: aware UTC now. Components take it as a default and tests pass their own."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> datetime:
    return datetime.now(UTC)
