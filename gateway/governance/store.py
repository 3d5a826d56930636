"""Keys and teams in the database (``managed_keys``, ``managed_teams``), with the audit and
the change counter written in the same transaction as each change.

Every write adds 1 to ``governance_changes.version``: a process that reads a version
other than the one it loaded reloads keys and teams (gateway.governance.directory).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from gateway.db.governance_tables import (
    admin_audit,
    governance_changes,
    managed_keys,
    managed_teams,
)
from gateway.domain.settings import Team
from gateway.governance.documents import (
    StoredKey,
    budget_from,
    decode,
    rate_limit_from,
)

_k = managed_keys.c
_t = managed_teams.c
_a = admin_audit.c


def stored_key(row: Any) -> StoredKey:
    configurations = decode(row["configurations"])
    metadata = decode(row["metadata"])
    return StoredKey(
        id=row["id"],
        digest=row["digest"],
        prefix=row["prefix"],
        team=row["team_id"],
        created_at=row["created_at"],
        expires_at=row["expires_at"],
        revoked_at=row["revoked_at"],
        last_used_at=row["last_used_at"],
        configurations=frozenset(configurations) if isinstance(configurations, list) else None,
        budget=budget_from(decode(row["budget"])),
        rate_limit=rate_limit_from(decode(row["rate_limit"])),
        metadata=metadata if isinstance(metadata, dict) else {},
        previous_digest=row["previous_digest"],
        previous_expires_at=row["previous_expires_at"],
    )


def stored_team(row: Any) -> Team:
    configurations = decode(row["configurations"])
    metadata = decode(row["metadata"])
    return Team(
        id=row["id"],
        configurations=frozenset(configurations) if isinstance(configurations, list) else None,
        budget=budget_from(decode(row["budget"])),
        rate_limit=rate_limit_from(decode(row["rate_limit"])),
        metadata=metadata if isinstance(metadata, dict) else {},
        source="database",
    )


class GovernanceStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def version(self) -> int:
        async with self.engine.connect() as connection:
            found = await connection.scalar(
                select(governance_changes.c.version).where(governance_changes.c.id == 1)
            )
        return int(found or 0)

    async def load(self) -> tuple[int, list[StoredKey], list[Team]]:
        """The version, then every key and team, in one read transaction."""
        async with self.engine.connect() as connection:
            version = await connection.scalar(
                select(governance_changes.c.version).where(governance_changes.c.id == 1)
            )
            keys = (await connection.execute(select(managed_keys))).mappings().all()
            teams = (await connection.execute(select(managed_teams))).mappings().all()
        return (
            int(version or 0),
            [stored_key(row) for row in keys],
            [stored_team(row) for row in teams],
        )

    async def key(self, key_id: str) -> StoredKey | None:
        async with self.engine.connect() as connection:
            row = (
                (await connection.execute(select(managed_keys).where(_k.id == key_id)))
                .mappings()
                .first()
            )
        return stored_key(row) if row is not None else None

    async def team(self, team_id: str) -> Team | None:
        async with self.engine.connect() as connection:
            row = (
                (await connection.execute(select(managed_teams).where(_t.id == team_id)))
                .mappings()
                .first()
            )
        return stored_team(row) if row is not None else None

    async def team_key_count(self, team_id: str) -> int:
        async with self.engine.connect() as connection:
            found = await connection.scalar(
                select(func.count()).select_from(managed_keys).where(_k.team_id == team_id)
            )
        return int(found or 0)

    async def write(
        self,
        statement: Any,
        *,
        actor: str,
        action: str,
        target: str,
        changes: dict[str, Any],
        now: datetime,
    ) -> int:
        """Run ``statement``, audit it and count the change, in one transaction; the number
        of rows the statement touched."""
        async with self.engine.begin() as connection:
            result = await connection.execute(statement)
            touched = int(result.rowcount or 0)
            if touched:
                await _audit_and_count(connection, actor, action, target, changes, now)
        return touched

    async def touch(self, used: Mapping[str, datetime]) -> None:
        """``last_used_at`` of the keys used since the last call (no change counted)."""
        if not used:
            return
        async with self.engine.begin() as connection:
            for key_id, moment in sorted(used.items()):
                await connection.execute(
                    update(managed_keys)
                    .where(_k.id == key_id)
                    .where((_k.last_used_at.is_(None)) | (_k.last_used_at < moment))
                    .values(last_used_at=moment)
                )

    async def audit(self, limit: int, before: int | None) -> list[dict[str, Any]]:
        query = select(admin_audit).order_by(_a.id.desc()).limit(limit)
        if before is not None:
            query = query.where(_a.id < before)
        async with self.engine.connect() as connection:
            rows = (await connection.execute(query)).mappings().all()
        return [dict(row) for row in rows]


async def _audit_and_count(
    connection: AsyncConnection,
    actor: str,
    action: str,
    target: str,
    changes: dict[str, Any],
    now: datetime,
) -> None:
    await connection.execute(
        insert(admin_audit).values(
            created_at=now,
            actor=actor,
            action=action,
            target=target,
            changes=json.dumps(changes, sort_keys=True, default=str),
        )
    )
    bumped = await connection.execute(
        update(governance_changes)
        .where(governance_changes.c.id == 1)
        .values(version=governance_changes.c.version + 1)
    )
    if not bumped.rowcount:
        await connection.execute(insert(governance_changes).values(id=1, version=1))
