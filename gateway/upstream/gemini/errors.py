"""Gemini API error answers as OpenAI error envelopes, and the retry delay they ask (pure).

Google's error shape: ``{"error": {"code": 429, "message": "...", "status":
"RESOURCE_EXHAUSTED", "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
"retryDelay": "27s"}, ...]}}``. The envelope's ``code`` is the ``status``; the client's
HTTP status is the answer's own (or the status's usual one when the answer's is a 2xx).
"""

from __future__ import annotations

import re
from typing import Any

from gateway.domain.errors import envelope
from gateway.upstream.error_body import ErrorBody, openai_envelope

STATUS_BY_CODE = {
    "INVALID_ARGUMENT": 400,
    "FAILED_PRECONDITION": 400,
    "OUT_OF_RANGE": 400,
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "NOT_FOUND": 404,
    "ABORTED": 409,
    "ALREADY_EXISTS": 409,
    "RESOURCE_EXHAUSTED": 429,
    "CANCELLED": 499,
    "INTERNAL": 500,
    "UNKNOWN": 500,
    "DATA_LOSS": 500,
    "NOT_IMPLEMENTED": 501,
    "UNAVAILABLE": 503,
    "DEADLINE_EXCEEDED": 504,
}
_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
_KEY_REASONS = frozenset({"API_KEY_INVALID", "API_KEY_EXPIRED"})
_DURATION = re.compile(r"^(\d{1,6})(\.\d{1,9})?s$")


def parse_error(data: Any) -> tuple[int | None, str | None, str | None]:
    """(code, status, message) of a Google error object."""
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return None, None, None
    code, status, message = error.get("code"), error.get("status"), error.get("message")
    return (
        code if isinstance(code, int) and not isinstance(code, bool) else None,
        status if isinstance(status, str) and status else None,
        message if isinstance(message, str) else None,
    )


def retry_delay(data: Any) -> str | None:
    """RetryInfo's ``retryDelay`` in seconds, as a Retry-After value ("27", "1.5")."""
    error = data.get("error") if isinstance(data, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    for detail in details if isinstance(details, list) else []:
        if not isinstance(detail, dict) or detail.get("@type") != _RETRY_INFO:
            continue
        match = _DURATION.match(str(detail.get("retryDelay", "")))
        if match:
            fraction = (match.group(2) or "")[:7].rstrip("0").rstrip(".")
            return match.group(1) + fraction
    return None


def key_refused(data: Any) -> bool:
    """Google answers a bad API key with a 400 whose ErrorInfo reason says so: it is the
    gateway's credential that failed, not the client's request."""
    error = data.get("error") if isinstance(data, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    return any(
        isinstance(d, dict) and d.get("@type") == _ERROR_INFO and d.get("reason") in _KEY_REASONS
        for d in (details if isinstance(details, list) else [])
    )


def map_error(status: int, body: ErrorBody) -> tuple[int, dict[str, Any]]:
    """A Gemini error response as (status for the client, OpenAI error envelope); a 400
    refusing the API key as the 401 it means (the gateway's credentials: not relayed)."""
    code, google_status, message = parse_error(body.data) if body.is_json else (None, None, None)
    if body.is_json and key_refused(body.data):
        status = 401
    if status < 400:
        status = STATUS_BY_CODE.get(google_status or "", code if code and code >= 400 else 502)
    if google_status is None and message is None:
        return status, openai_envelope(status, body)
    text = message or f"the Gemini upstream answered HTTP {status}"
    return status, envelope(status, text, code=google_status or "upstream_error")
