"""Budget counters, budget reservations and the response cache (migration 0002).

``budget_counters`` holds, per budget window, what is used plus what is held
by calls in flight; admission is one conditional UPDATE on it. Every hold is
also a ``budget_reservations`` row with an expiry, so the hold of a call whose
process died is released by the sweeper instead of leaking.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Date,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    text,
)

from gateway.db.base import metadata
from gateway.db.types import LongBinary, Money, UtcDateTime

SCOPE_LEN = 16  # "key" | "configuration"
SCOPE_ID_LEN = 128  # gateway-key and configuration ids
PERIOD_LEN = 8  # "day" | "month"
ZERO = text("0")


budget_counters = Table(
    "budget_counters",
    metadata,
    Column("scope", String(SCOPE_LEN), nullable=False),
    Column("scope_id", String(SCOPE_ID_LEN), nullable=False),
    Column("period", String(PERIOD_LEN), nullable=False),
    Column("window_start", Date, nullable=False),
    Column("requests", BigInteger, nullable=False, default=0, server_default=ZERO),
    Column("tokens", BigInteger, nullable=False, default=0, server_default=ZERO),
    Column("cost", Money, nullable=False, default=0, server_default=ZERO),
    PrimaryKeyConstraint("scope", "scope_id", "period", "window_start"),
)

budget_reservations = Table(
    "budget_reservations",
    metadata,
    Column("reservation_id", String(32), nullable=False),
    Column("line", Integer, nullable=False),  # which of the call's budgets (0..3)
    Column("scope", String(SCOPE_LEN), nullable=False),
    Column("scope_id", String(SCOPE_ID_LEN), nullable=False),
    Column("period", String(PERIOD_LEN), nullable=False),
    Column("window_start", Date, nullable=False),
    Column("requests", BigInteger, nullable=False),
    Column("tokens", BigInteger, nullable=False),
    Column("cost", Money, nullable=False),
    Column("expires_at", UtcDateTime, nullable=False),
    PrimaryKeyConstraint("reservation_id", "line"),
)
Index("ix_budget_reservations_expires_at", budget_reservations.c.expires_at)

response_cache = Table(
    "response_cache",
    metadata,
    Column("cache_key", String(64), nullable=False),  # hex SHA-256
    Column("body", LongBinary(), nullable=False),  # a cached answer can pass 64 KiB
    Column("response_model", String(255)),
    Column("expires_at", UtcDateTime, nullable=False),
    PrimaryKeyConstraint("cache_key"),
)
Index("ix_response_cache_expires_at", response_cache.c.expires_at)
