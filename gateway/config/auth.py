"""Phase 2 for ``auth``: keys become SHA-256 digests; no key is kept or quoted."""

from __future__ import annotations

from gateway.config.errors import Problems, child, item
from gateway.config.references import Ids, parsed_entries
from gateway.config.schema import AuthSchema, KeySchema, TeamSchema
from gateway.config.sections import to_budget, to_rate_limit
from gateway.domain.keys import hash_key, parse_key_hash
from gateway.domain.settings import ApiKey, AuthSettings, Team


def resolve_teams(
    entries: list[TeamSchema], configurations: Ids, problems: Problems
) -> tuple[tuple[Team, ...], Ids]:
    """YAML ``teams[]``: read-only at runtime (``/admin/teams`` answers 409 for them)."""
    ids = Ids("team", problems)
    teams: list[Team] = []
    for index, entry in parsed_entries(entries):
        path = item("teams", index)
        if entry.configurations is not None:
            configurations.check_all(child(path, "configurations"), entry.configurations)
        if not ids.claim(path, entry.id):
            continue
        teams.append(
            Team(
                id=entry.id,
                configurations=frozenset(entry.configurations)
                if entry.configurations is not None
                else None,
                budget=to_budget(entry.budget),
                rate_limit=to_rate_limit(entry.rate_limit),
                metadata=dict(entry.metadata or {}),
            )
        )
    return tuple(teams), ids


def resolve_auth(
    entry: AuthSchema, configurations: Ids, problems: Problems, teams: Ids | None = None
) -> AuthSettings:
    admin_key_hash = None
    if entry.admin_key is not None:
        if entry.admin_key:
            admin_key_hash = hash_key(entry.admin_key)
        else:
            problems.add("auth.adminKey", "must not be empty")
    keys: list[ApiKey] = []
    ids = Ids("key", problems)
    owner_of_hash: dict[str, str] = {}  # digest -> path of the key holding it
    if admin_key_hash is not None:
        owner_of_hash[admin_key_hash] = "auth.adminKey"
    for index, key_entry in parsed_entries(entry.keys):
        path = item("auth.keys", index)
        digest = _digest(key_entry, path, problems)
        if key_entry.configurations is not None:
            configurations.check_all(child(path, "configurations"), key_entry.configurations)
        if key_entry.team is not None and teams is not None:
            teams.check(child(path, "team"), key_entry.team)
        if not ids.claim(path, key_entry.id) or digest is None:
            continue
        if digest in owner_of_hash:
            # Name the other holder, never the key.
            problems.add(path, f"same key as {owner_of_hash[digest]}")
            continue
        owner_of_hash[digest] = path
        keys.append(_api_key(key_entry, digest))
    return AuthSettings(
        admin_key_hash=admin_key_hash,
        keys=tuple(keys),
        allow_unauthenticated=entry.allow_unauthenticated,
        console_session_hours=entry.console_session_hours,
    )


def _digest(entry: KeySchema, path: str, problems: Problems) -> str | None:
    """The key's hex digest from exactly one of ``key`` and ``keyHash``."""
    if any(problems.has_problem_at(child(path, name)) for name in ("key", "keyHash")):
        return None  # already reported; it fell back to None
    if entry.key is not None and entry.key_hash is not None:
        problems.add(path, "set either key or keyHash, not both")
        return None
    if entry.key is not None:
        if not entry.key:
            problems.add(child(path, "key"), "must not be empty")
            return None
        return hash_key(entry.key)
    if entry.key_hash is not None:
        try:
            return parse_key_hash(entry.key_hash)
        except ValueError as exc:
            problems.add(child(path, "keyHash"), str(exc))
            return None
    problems.add(path, "requires key or keyHash")
    return None


def _api_key(entry: KeySchema, digest: str) -> ApiKey:
    return ApiKey(
        id=entry.id,
        key_hash=digest,
        configurations=frozenset(entry.configurations)
        if entry.configurations is not None
        else None,
        budget=to_budget(entry.budget),
        team=entry.team,
        rate_limit=to_rate_limit(entry.rate_limit),
    )
