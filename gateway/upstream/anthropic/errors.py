"""Anthropic error answers and events as OpenAI error envelopes (pure)."""

from __future__ import annotations

from typing import Any

from gateway.domain.errors import envelope
from gateway.messages.errors import STATUS_BY_TYPE
from gateway.upstream.error_body import ErrorBody, openai_envelope

# Anthropic's documented error types and the status each comes with (the Messages API's).
STATUS_BY_ERROR_TYPE = STATUS_BY_TYPE


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
