"""Anthropic error answers and events as OpenAI error envelopes (pure)."""

from __future__ import annotations

from typing import Any

from gateway.domain.errors import envelope
from gateway.upstream.error_body import ErrorBody, openai_envelope

# Anthropic's documented error types and the status each comes with.
STATUS_BY_ERROR_TYPE = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


def parse_error(data: Any) -> tuple[str | None, str | None]:
    """(type, message) of an Anthropic error object `{"type": "error", "error": {...}}`."""
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return None, None
    kind, message = error.get("type"), error.get("message")
    return (
        kind if isinstance(kind, str) else None,
        message if isinstance(message, str) else None,
    )


def map_error(status: int, body: ErrorBody) -> tuple[int, dict[str, Any]]:
    """An Anthropic error response as (status for the client, OpenAI error envelope).

    A body not in Anthropic's shape (a proxy's page, an OpenAI-style envelope) is
    treated as any other upstream's.
    """
    kind, message = parse_error(body.data) if body.is_json else (None, None)
    if status < 400:  # an error body on a success status: trust the body's type
        status = STATUS_BY_ERROR_TYPE.get(kind or "", 502)
    if kind is None and message is None:
        return status, openai_envelope(status, body)
    text = message or f"the Anthropic upstream answered HTTP {status}"
    return status, envelope(status, text, code=kind or "upstream_error")
