"""The admin writes on keys and teams, shared by ``/admin/keys``, ``/admin/teams`` and the
``gateway keys`` CLI: check, write (with its audit row and the change counter), reload.

A key is returned in clear once, by ``create`` and ``rotate``; it is never stored, logged
or audited (the audit names the fields written, and a key's ``prefix`` at most).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, insert, update
from sqlalchemy.exc import IntegrityError

from gateway.db.governance_tables import managed_keys, managed_teams
from gateway.domain.errors import (
    AlreadyExists,
    InvalidRequest,
    KeyFromFile,
    NotFound,
    TeamFromFile,
    TeamHasKeys,
)
from gateway.domain.settings import GatewayConfig
from gateway.governance.directory import Directory
from gateway.governance.documents import (
    SHOWN_PREFIX,
    KeyBody,
    RotateBody,
    TeamBody,
    budget_document,
    checked_budget,
    checked_rate_limit,
    digest_of,
    encode,
    key_view,
    new_id,
    new_key,
    parse_time,
    rate_limit_document,
    team_view,
)

MAX_GRACE_SECONDS = 30 * 24 * 3600
_k = managed_keys.c
_t = managed_teams.c


class Admin:
    def __init__(self, directory: Directory, config: GatewayConfig) -> None:
        self.directory = directory
        self.config = config

    # --- keys ----------------------------------------------------------------------

    async def create_key(
        self, body: KeyBody, actor: str, now: datetime
    ) -> tuple[str, dict[str, Any]]:
        """The new key (shown once) and its view."""
        key_id = body.id or new_id()
        if self.directory.key(key_id) is not None:
            raise AlreadyExists(f"A key with the id '{key_id}' exists.", param="id")
        fields = self._key_fields(body, set(body.__struct_fields__), now)
        secret = new_key()
        values = {
            "id": key_id,
            "digest": digest_of(secret),
            "prefix": secret[:SHOWN_PREFIX],
            "created_at": now,
            **fields,
        }
        try:
            await self.directory.store.write(
                insert(managed_keys).values(**values),
                actor=actor,
                action="key.create",
                target=f"key:{key_id}",
                changes=_audited(fields),
                now=now,
            )
        except IntegrityError:
            raise AlreadyExists(f"A key with the id '{key_id}' exists.", param="id") from None
        await self.directory.changed()
        return secret, self.show_key(key_id, now)

    async def patch_key(
        self, key_id: str, body: KeyBody, sent: set[str], actor: str, now: datetime
    ) -> dict[str, Any]:
        self._writable_key(key_id)
        if "id" in sent:
            raise InvalidRequest("A key's id cannot be changed.", param="id")
        fields = self._key_fields(body, _snake(sent), now)
        if fields:
            await self.directory.store.write(
                update(managed_keys).where(_k.id == key_id).values(**fields),
                actor=actor,
                action="key.update",
                target=f"key:{key_id}",
                changes=_audited(fields),
                now=now,
            )
            await self.directory.changed()
        return self.show_key(key_id, now)

    async def rotate_key(
        self, key_id: str, body: RotateBody, actor: str, now: datetime
    ) -> tuple[str, dict[str, Any]]:
        stored = self._writable_key(key_id)
        if stored.revoked_at is not None:
            raise InvalidRequest(f"The key '{key_id}' is revoked.", param="id")
        grace = body.grace_seconds
        if not 0 <= grace <= MAX_GRACE_SECONDS:
            raise InvalidRequest(
                f"'graceSeconds' must be between 0 and {MAX_GRACE_SECONDS}.", param="graceSeconds"
            )
        secret = new_key()
        fields = {
            "digest": digest_of(secret),
            "prefix": secret[:SHOWN_PREFIX],
            "previous_digest": stored.digest if grace else None,
            "previous_expires_at": now + timedelta(seconds=grace) if grace else None,
        }
        await self.directory.store.write(
            update(managed_keys).where(_k.id == key_id).values(**fields),
            actor=actor,
            action="key.rotate",
            target=f"key:{key_id}",
            changes={"graceSeconds": grace, "prefix": fields["prefix"]},
            now=now,
        )
        await self.directory.changed()
        return secret, self.show_key(key_id, now)

    async def revoke_key(self, key_id: str, actor: str, now: datetime) -> dict[str, Any]:
        stored = self._writable_key(key_id)
        if stored.revoked_at is None:
            await self.directory.store.write(
                update(managed_keys)
                .where(_k.id == key_id)
                .values(revoked_at=now, previous_digest=None, previous_expires_at=None),
                actor=actor,
                action="key.revoke",
                target=f"key:{key_id}",
                changes={"revokedAt": now.isoformat()},
                now=now,
            )
            await self.directory.changed()
        return self.show_key(key_id, now)

    def show_key(self, key_id: str, now: datetime) -> dict[str, Any]:
        stored = self.directory.key(key_id)
        if stored is None:
            raise NotFound(f"No key has the id '{key_id}'.", param="id")
        return key_view(stored, now)

    def list_keys(self, team: str | None, now: datetime) -> list[dict[str, Any]]:
        return [
            key_view(key, now)
            for key in self.directory.all_keys()
            if team is None or key.team == team
        ]

    def _writable_key(self, key_id: str) -> Any:
        if self.directory.is_file_key(key_id):
            raise KeyFromFile(
                f"The key '{key_id}' is defined in the configuration file (auth.keys): "
                "change it there.",
                param="id",
            )
        stored = self.directory.key(key_id)
        if stored is None:
            raise NotFound(f"No key has the id '{key_id}'.", param="id")
        return stored

    def _key_fields(self, body: KeyBody, sent: set[str], now: datetime) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        if "team" in sent:
            if body.team is not None and self.directory.team(body.team) is None:
                raise InvalidRequest(f"No team has the id '{body.team}'.", param="team")
            fields["team_id"] = body.team
        fields.update(self._common(body, sent))
        if "expires_at" in sent:
            fields["expires_at"] = parse_time(body.expires_at, "expiresAt")
        return fields

    def _common(self, body: KeyBody | TeamBody, sent: set[str]) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        if "configurations" in sent:
            if body.configurations is not None:
                unknown = [c for c in body.configurations if c not in self.config.configurations]
                if unknown:
                    raise InvalidRequest(
                        f"Unknown configuration '{unknown[0]}'.", param="configurations"
                    )
                fields["configurations"] = encode(sorted(set(body.configurations)))
            else:
                fields["configurations"] = None
        if "budget" in sent:
            fields["budget"] = encode(budget_document(checked_budget(body.budget)))
        if "rate_limit" in sent:
            fields["rate_limit"] = encode(rate_limit_document(checked_rate_limit(body.rate_limit)))
        if "metadata" in sent:
            fields["metadata"] = encode(body.metadata or {})
        return fields

    # --- teams ---------------------------------------------------------------------

    async def create_team(self, body: TeamBody, actor: str, now: datetime) -> dict[str, Any]:
        if body.id is None:
            raise InvalidRequest("'id' is required.", param="id")
        if body.team is not None:
            raise InvalidRequest("A team has no team.", param="team")
        if self.directory.team(body.id) is not None:
            raise AlreadyExists(f"A team with the id '{body.id}' exists.", param="id")
        fields = self._common(body, set(body.__struct_fields__))
        try:
            await self.directory.store.write(
                insert(managed_teams).values(id=body.id, created_at=now, **fields),
                actor=actor,
                action="team.create",
                target=f"team:{body.id}",
                changes=_audited(fields),
                now=now,
            )
        except IntegrityError:
            raise AlreadyExists(f"A team with the id '{body.id}' exists.", param="id") from None
        await self.directory.changed()
        return self.show_team(body.id)

    async def patch_team(
        self, team_id: str, body: TeamBody, sent: set[str], actor: str, now: datetime
    ) -> dict[str, Any]:
        self._writable_team(team_id)
        if "id" in sent or "team" in sent:
            raise InvalidRequest("A team's id cannot be changed.", param="id")
        fields = self._common(body, _snake(sent))
        if fields:
            await self.directory.store.write(
                update(managed_teams).where(_t.id == team_id).values(**fields),
                actor=actor,
                action="team.update",
                target=f"team:{team_id}",
                changes=_audited(fields),
                now=now,
            )
            await self.directory.changed()
        return self.show_team(team_id)

    async def delete_team(self, team_id: str, actor: str, now: datetime) -> None:
        self._writable_team(team_id)
        keys = self._team_keys(team_id)
        if keys or await self.directory.store.team_key_count(team_id):
            raise TeamHasKeys(
                f"The team '{team_id}' has keys: move or revoke them first "
                "(a revoked key still names its team; PATCH its team to null).",
                param="id",
            )
        await self.directory.store.write(
            delete(managed_teams).where(_t.id == team_id),
            actor=actor,
            action="team.delete",
            target=f"team:{team_id}",
            changes={},
            now=now,
        )
        await self.directory.changed()

    def show_team(self, team_id: str) -> dict[str, Any]:
        team = self.directory.team(team_id)
        if team is None:
            raise NotFound(f"No team has the id '{team_id}'.", param="id")
        return team_view(team, self._team_keys(team_id))

    def list_teams(self) -> list[dict[str, Any]]:
        return [team_view(team, self._team_keys(team.id)) for team in self.directory.teams()]

    def _team_keys(self, team_id: str) -> int:
        return sum(1 for key in self.directory.all_keys() if key.team == team_id)

    def _writable_team(self, team_id: str) -> None:
        team = self.directory.team(team_id)
        if team is None:
            raise NotFound(f"No team has the id '{team_id}'.", param="id")
        if team.source == "file":
            raise TeamFromFile(
                f"The team '{team_id}' is defined in the configuration file (teams): "
                "change it there.",
                param="id",
            )


def _snake(sent: set[str]) -> set[str]:
    names = {"rateLimit": "rate_limit", "expiresAt": "expires_at"}
    return {names.get(name, name) for name in sent}


def _audited(fields: dict[str, Any]) -> dict[str, Any]:
    """The fields as written, by their API names (no key material is ever among them)."""
    names = {
        "team_id": "team",
        "rate_limit": "rateLimit",
        "expires_at": "expiresAt",
    }
    return {names.get(name, name): value for name, value in fields.items()}
