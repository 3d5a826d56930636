"""Keys and teams as the admin API and the database hold them (pure).

An admin body is checked by the same schema as the YAML (``budget`` and ``rateLimit``
have the shapes of ``auth.keys[].budget`` and ``rateLimit``), so a limit means the same
wherever it is set. What the database stores is the document this module writes back
from the checked values, never the body as sent.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import msgspec

from gateway.config.convert import to_struct
from gateway.config.errors import Problems
from gateway.config.schema import BudgetSchema, Id, RateLimitSchema
from gateway.config.sections import to_budget, to_rate_limit
from gateway.domain.errors import InvalidRequest
from gateway.domain.keys import hash_key
from gateway.domain.limits import RateLimit
from gateway.domain.model import BudgetLimits, BudgetSpec
from gateway.domain.settings import ApiKey, Team

KEY_PREFIX = "sk-gw-"
SHOWN_PREFIX = 12  # characters of a key kept for display: "sk-gw-" and 6 more
METADATA_MAX_BYTES = 4096
_ID = re.compile(r"[!-~]{1,128}")

Metadata = dict[str, Any]


class _Fields(msgspec.Struct, forbid_unknown_fields=True, rename="camel", kw_only=True):
    team: Id | None = None
    configurations: list[Id] | None = None
    budget: BudgetSchema | None = None
    rate_limit: RateLimitSchema | None = None
    metadata: Metadata | None = None


class KeyBody(_Fields, kw_only=True):
    id: Id | None = None
    expires_at: str | None = None


class TeamBody(_Fields, kw_only=True):
    id: Id | None = None


class RotateBody(msgspec.Struct, forbid_unknown_fields=True, rename="camel", kw_only=True):
    grace_seconds: int = 0


@dataclass(frozen=True, slots=True)
class StoredKey:
    """One ``managed_keys`` row (or a YAML key, ``source`` file), decoded."""

    id: str
    digest: str = field(repr=False)
    prefix: str = ""
    team: str | None = None
    created_at: datetime | None = None
    expires_at: datetime | None = None
    revoked_at: datetime | None = None
    last_used_at: datetime | None = None
    configurations: frozenset[str] | None = None
    budget: BudgetSpec | None = None
    rate_limit: RateLimit | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    previous_digest: str | None = field(default=None, repr=False)
    previous_expires_at: datetime | None = None
    source: str = "database"


def new_key() -> str:
    """A new gateway key: ``sk-gw-`` and 43 URL-safe characters (256 random bits)."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def new_id() -> str:
    return "key-" + secrets.token_hex(6)


def parse_body(raw: bytes, struct: type[msgspec.Struct]) -> Any:
    """A JSON object body as ``struct``, every field checked like the YAML's; 400 otherwise."""
    if not raw.strip():
        raw = b"{}"
    try:
        tree = json.loads(raw, parse_float=Decimal)
    except ValueError:
        raise InvalidRequest("The body is not valid JSON.") from None
    if not isinstance(tree, dict):
        raise InvalidRequest("The body must be a JSON object.")
    problems = Problems()
    parsed = to_struct(tree, struct, problems)
    if problems or parsed is None:
        first = problems.lines()[0] if problems else "invalid body"
        raise InvalidRequest(f"Invalid body: {first}.")
    metadata = getattr(parsed, "metadata", None)
    if metadata is not None and len(json.dumps(metadata)) > METADATA_MAX_BYTES:
        raise InvalidRequest(f"'metadata' is larger than {METADATA_MAX_BYTES} bytes.")
    return parsed


def sent_fields(raw: bytes) -> set[str]:
    """The top-level names a body sent (a PATCH changes only those; ``null`` clears one)."""
    try:
        tree = json.loads(raw or b"{}", parse_float=Decimal)
    except ValueError:
        return set()
    return set(tree) if isinstance(tree, dict) else set()


def parse_time(value: str | None, name: str) -> datetime | None:
    """An ISO 8601 time with a zone (``Z`` or an offset) -> aware UTC; 400 otherwise."""
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidRequest(f"'{name}' must be an ISO 8601 time.", param=name) from None
    if moment.tzinfo is None:
        raise InvalidRequest(f"'{name}' must carry a zone, e.g. 'Z'.", param=name)
    return moment.astimezone(UTC)


def budget_document(spec: BudgetSpec | None) -> dict[str, Any] | None:
    if spec is None:
        return None
    document: dict[str, Any] = {}
    for name, limits in (("daily", spec.daily), ("monthly", spec.monthly)):
        if limits is None:
            continue
        part: dict[str, Any] = {}
        if limits.requests is not None:
            part["requests"] = limits.requests
        if limits.tokens is not None:
            part["tokens"] = limits.tokens
        if limits.cost is not None:
            part["cost"] = format(limits.cost.normalize(), "f")
        document[name] = part
    return document


def rate_limit_document(limit: RateLimit | None) -> dict[str, int] | None:
    if limit is None:
        return None
    document: dict[str, int] = {}
    if limit.requests_per_minute is not None:
        document["requestsPerMinute"] = limit.requests_per_minute
    if limit.tokens_per_minute is not None:
        document["tokensPerMinute"] = limit.tokens_per_minute
    if limit.concurrent is not None:
        document["concurrent"] = limit.concurrent
    return document


def budget_from(document: Any) -> BudgetSpec | None:
    """A stored budget document -> the domain's spec (None for none or an unreadable one)."""
    if not isinstance(document, dict):
        return None
    daily, monthly = _limits(document.get("daily")), _limits(document.get("monthly"))
    return BudgetSpec(daily=daily, monthly=monthly)


def _limits(part: Any) -> BudgetLimits | None:
    if not isinstance(part, dict):
        return None
    cost = part.get("cost")
    return BudgetLimits(
        requests=part.get("requests"),
        tokens=part.get("tokens"),
        cost=Decimal(str(cost)) if cost is not None else None,
    )


def rate_limit_from(document: Any) -> RateLimit | None:
    if not isinstance(document, dict):
        return None
    limit = RateLimit(
        requests_per_minute=document.get("requestsPerMinute"),
        tokens_per_minute=document.get("tokensPerMinute"),
        concurrent=document.get("concurrent"),
    )
    return None if limit.is_empty else limit


def encode(document: Any) -> str | None:
    return None if document is None else json.dumps(document, sort_keys=True)


def decode(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def checked_budget(entry: BudgetSchema | None) -> BudgetSpec | None:
    return to_budget(entry)


def checked_rate_limit(entry: RateLimitSchema | None) -> RateLimit | None:
    return to_rate_limit(entry)


def iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def key_view(key: StoredKey, now: datetime) -> dict[str, Any]:
    """A key as the admin API shows it: never the key, never its digest."""
    return {
        "id": key.id,
        "object": "gateway.key",
        "source": key.source,
        "prefix": key.prefix or None,
        "team": key.team,
        "configurations": sorted(key.configurations) if key.configurations is not None else None,
        "budget": budget_document(key.budget),
        "rateLimit": rate_limit_document(key.rate_limit),
        "metadata": key.metadata,
        "createdAt": iso(key.created_at),
        "expiresAt": iso(key.expires_at),
        "revokedAt": iso(key.revoked_at),
        "lastUsedAt": iso(key.last_used_at),
        "status": status_of(key, now),
    }


def team_view(team: Team, key_count: int) -> dict[str, Any]:
    return {
        "id": team.id,
        "object": "gateway.team",
        "source": team.source,
        "configurations": sorted(team.configurations) if team.configurations is not None else None,
        "budget": budget_document(team.budget),
        "rateLimit": rate_limit_document(team.rate_limit),
        "metadata": team.metadata,
        "keys": key_count,
    }


def status_of(key: StoredKey, now: datetime) -> str:
    if key.revoked_at is not None:
        return "revoked"
    if key.expires_at is not None and now >= key.expires_at:
        return "expired"
    return "active"


def file_key(key: ApiKey) -> StoredKey:
    return StoredKey(
        id=key.id,
        digest=key.key_hash,
        team=key.team,
        configurations=key.configurations,
        budget=key.budget,
        rate_limit=key.rate_limit,
        source="file",
    )


def effective(key: StoredKey, team: Team | None) -> ApiKey:
    """The key a call is served as: its own configurations met with its team's, its team's
    budget and rate limit beside its own."""
    configurations = key.configurations
    if team is not None and team.configurations is not None:
        configurations = (
            team.configurations if configurations is None else configurations & team.configurations
        )
    return ApiKey(
        id=key.id,
        key_hash=key.digest,
        configurations=configurations,
        budget=key.budget,
        team=key.team,
        team_budget=team.budget if team is not None else None,
        rate_limit=key.rate_limit,
        team_rate_limit=team.rate_limit if team is not None else None,
        source=key.source,
        expires_at=key.expires_at,
    )


def previous(key: ApiKey, digest: str, until: datetime | None) -> ApiKey:
    """The key a rotation replaced (its digest), served until ``until``."""
    return replace(key, key_hash=digest, expires_at=until)


def digest_of(key: str) -> str:
    return hash_key(key)


def valid_id(value: str) -> bool:
    return bool(_ID.fullmatch(value))
