"""Keys and teams made at runtime, the admin audit and the change counter (migration 0012;
docs/operations.md, "Keys and teams at runtime").

- ``managed_keys``: one row per key id, never deleted (a revoked key keeps its row, so
  telemetry and budgets still name it). Only the SHA-256 digest of a key is stored, with
  a short display prefix; after a rotation the previous digest works until
  ``previous_expires_at``.
- ``managed_teams``: teams made through ``/admin/teams``.
- ``admin_audit``: every admin write: when, who (``admin-key`` or ``session:<id>``),
  what, on which target, the changed fields (never key material).
- ``governance_changes``: one row whose ``version`` each write adds 1 to, in the same
  transaction; every process re-reads keys and teams when it sees a new version.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, Integer, String, Table, Text

from gateway.db.base import metadata
from gateway.db.tables import ID_LEN, ZERO
from gateway.db.types import BigId, UtcDateTime

DIGEST_LEN = 64  # hex SHA-256
PREFIX_LEN = 16
ACTION_LEN = 32
ACTOR_LEN = 80

managed_teams = Table(
    "managed_teams",
    metadata,
    Column("id", String(ID_LEN), primary_key=True),
    Column("created_at", UtcDateTime, nullable=False),
    Column("configurations", Text),  # JSON list; NULL: every configuration
    Column("budget", Text),  # JSON, the YAML budget block's shape
    Column("rate_limit", Text),  # JSON, the YAML rateLimit block's shape
    Column("metadata", Text),  # JSON object
)

managed_keys = Table(
    "managed_keys",
    metadata,
    Column("id", String(ID_LEN), primary_key=True),
    Column("team_id", String(ID_LEN)),
    Column("digest", String(DIGEST_LEN), nullable=False, unique=True),
    Column("prefix", String(PREFIX_LEN), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("expires_at", UtcDateTime),
    Column("revoked_at", UtcDateTime),
    Column("last_used_at", UtcDateTime),
    Column("configurations", Text),
    Column("budget", Text),
    Column("rate_limit", Text),
    Column("metadata", Text),
    Column("previous_digest", String(DIGEST_LEN)),
    Column("previous_expires_at", UtcDateTime),
)
Index("ix_managed_keys_team_id", managed_keys.c.team_id)

admin_audit = Table(
    "admin_audit",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("created_at", UtcDateTime, nullable=False),
    Column("actor", String(ACTOR_LEN), nullable=False),
    Column("action", String(ACTION_LEN), nullable=False),
    Column("target", String(ID_LEN + 8), nullable=False),  # "key:<id>" / "team:<id>"
    Column("changes", Text, nullable=False),  # JSON object of the fields written
)

governance_changes = Table(
    "governance_changes",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("version", BigInteger, nullable=False, server_default=ZERO),
)
