"""Console sessions signed out before they expired (migration 0008; docs/console.md#sign-in).

A session cookie is signed, so every process accepts it without asking anyone; a
sign-out writes the session's id (the token's nonce) here with the session's own
expiry, and every process refuses a cookie whose id is listed. A row is useless once
its session has expired: sign-out deletes those.
"""

from __future__ import annotations

from sqlalchemy import Column, Index, String, Table

from gateway.db.base import metadata
from gateway.db.types import UtcDateTime

SESSION_ID_LEN = 64  # the nonce: 32 hex characters today

console_revoked_sessions = Table(
    "console_revoked_sessions",
    metadata,
    Column("session_id", String(SESSION_ID_LEN), primary_key=True),
    Column("expires_at", UtcDateTime, nullable=False),
)
Index("ix_console_revoked_sessions_expires_at", console_revoked_sessions.c.expires_at)
