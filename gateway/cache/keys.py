"""The cache key of a whole call (pure).

It covers the resolved configuration, the endpoint and the whole request body,
canonicalised (object keys sorted at every depth), so two bodies that differ
only in key order share an answer and any other difference does not. A cache
scoped to the key adds the calling key's id, so keys never see each other's
answers.
"""

from __future__ import annotations

import dataclasses
import hashlib
from decimal import Decimal
from typing import Any

import msgspec

from gateway.domain.model import Configuration
from gateway.domain.settings import GatewayConfig
from gateway.inbound import InboundRequest


def cache_key(configuration: str, request: InboundRequest, key_id: str | None = None) -> str:
    """Hex SHA-256 over the configuration (its fingerprint), the endpoint, the canonical body
    and, for a cache scoped to the key, the key's id (``""`` for calls without a key)."""
    canonical = msgspec.json.encode(request.body, order="sorted")
    digest = hashlib.sha256()
    digest.update(configuration.encode("utf-8"))
    digest.update(b"\x00")
    digest.update(request.endpoint.value.encode("ascii"))
    digest.update(b"\x00")
    digest.update(canonical)
    if key_id is not None:
        # After the body, whose JSON never holds a NUL byte: no body can imitate a scope.
        digest.update(b"\x00key\x00")
        digest.update(key_id.encode("utf-8"))
    return digest.hexdigest()


def configuration_fingerprints(config: GatewayConfig) -> dict[str, str]:
    """Per configuration id, a digest of what it resolves to: the configuration itself and
    every model (with its provider, key aside) it may route to.

    An answer cached before the configuration was edited (another model, other criteria,
    another price or base URL) then misses: caches outlive the process.
    """
    return {cid: _fingerprint(c, config) for cid, c in config.configurations.items()}


def _fingerprint(configuration: Configuration, config: GatewayConfig) -> str:
    if configuration.is_fixed and configuration.model is not None:
        models = [config.model(configuration.model)]
    else:
        models = [m for m in config.models if m.active]
    described = {
        "configuration": _plain(configuration),
        "models": [_plain(m) for m in models],
        "providers": sorted(
            (_plain(config.providers[m.provider]) for m in models),
            key=lambda p: str(p),
        ),
    }
    encoded = msgspec.json.encode(described, order="sorted")
    return f"{configuration.id}:{hashlib.sha256(encoded).hexdigest()}"


def _plain(value: Any) -> Any:
    """A canonical, JSON-ready form: sets sorted, decimals as text, no secret fields."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _plain(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.name != "api_key"
        }
    if isinstance(value, frozenset | set):
        return sorted(str(v) for v in value)
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, Decimal):
        return str(value)
    return value
