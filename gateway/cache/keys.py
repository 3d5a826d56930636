"""The cache key of a whole call (pure).

It covers the resolved configuration, the endpoint and the whole request body,
canonicalised (object keys sorted at every depth), so two bodies that differ
only in key order share an answer and any other difference does not.
"""

from __future__ import annotations

import hashlib

import msgspec

from gateway.inbound import InboundRequest


def cache_key(configuration_id: str, request: InboundRequest) -> str:
    """Hex SHA-256 over the configuration id, the endpoint and the canonical body."""
    canonical = msgspec.json.encode(request.body, order="sorted")
    digest = hashlib.sha256()
    digest.update(configuration_id.encode("utf-8"))
    digest.update(b"\x00")
    digest.update(request.endpoint.value.encode("ascii"))
    digest.update(b"\x00")
    digest.update(canonical)
    return digest.hexdigest()
