"""Errors on /v1/messages in Anthropic's envelope and status codes (pure).

The gateway's own errors and relayed upstream errors are written in OpenAI's envelope
everywhere else; on the Messages API a client (the anthropic SDK, Claude Code) reads
``{"type": "error", "error": {"type", "message"}}`` and picks its exception class by the
status. An answer already in Anthropic's envelope (a native upstream's) keeps its type;
an OpenAI one is typed by its ``code`` when that names an Anthropic type, else by its
status. Statuses Anthropic does not use become the nearest one it does (docs/messages.md).
"""

from __future__ import annotations

from typing import Any

import msgspec

_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()

# Anthropic's error types and the status each comes with.
STATUS_BY_TYPE = {
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


def error_type_for(status: int) -> str:
    """Anthropic's error type for an HTTP status."""
    for kind, kind_status in STATUS_BY_TYPE.items():
        if kind_status == status and kind != "billing_error":
            return kind
    if status >= 500:
        return "api_error"
    return "invalid_request_error"


def anthropic_status(status: int, kind: str) -> int:
    """The status Anthropic answers ``kind`` with; a 4xx it has no type of its own for
    (405, 409, 415, 422…) keeps its status."""
    if 400 <= status < 500 and kind == "invalid_request_error":
        return status
    return STATUS_BY_TYPE.get(kind, 500)


def error_body(kind: str, message: str, request_id: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
    if request_id is not None:
        body["request_id"] = request_id
    return body


def translate_error(status: int, raw: bytes, request_id: str | None) -> tuple[int, bytes]:
    """(status, body) of an error answer on /v1/messages, from the one the gateway would
    answer elsewhere (an OpenAI envelope, an Anthropic one, or anything else)."""
    try:
        data: Any = _decoder.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        data = None
    kind, message = _read(data)
    if kind is None or kind not in STATUS_BY_TYPE:
        kind = error_type_for(status)
    if message is None:
        message = f"The request failed with HTTP {status}."
    status = anthropic_status(status, kind)
    return status, _encoder.encode(error_body(kind, message, request_id))


def _read(data: Any) -> tuple[str | None, str | None]:
    """(type, message) of an Anthropic envelope, or (code, message) of an OpenAI one."""
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return None, None
    message = error.get("message")
    message = message if isinstance(message, str) else None
    if data.get("type") == "error":
        kind = error.get("type")
        return (kind if isinstance(kind, str) else None), message
    code = error.get("code")
    return (code if isinstance(code, str) else None), message


def stream_error_event(message: str, kind: str = "api_error") -> bytes:
    """The ``error`` event that ends a broken stream."""
    data = _encoder.encode(error_body(kind, message))
    return b"event: error\ndata: " + data + b"\n\n"
