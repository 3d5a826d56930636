"""Bedrock Runtime's errors as OpenAI error envelopes (pure).

Bedrock (AWS rest-json) names an error by the ``x-amzn-ErrorType`` header
(``ThrottlingException:http://internal.amazon.com/...``; some bodies carry ``__type``
too) with ``{"message": ...}`` as the body; in a ConverseStream the same exceptions
arrive as event-stream messages of type ``exception`` (``:exception-type``
``throttlingException``). The status of each is AWS's; the gateway's retry policy reads
it: 429 (throttled, Retry-After honoured when given), 408, 5xx are retried, other 4xx
relayed.
"""

from __future__ import annotations

from typing import Any

from gateway.domain.errors import envelope
from gateway.upstream.error_body import ErrorBody, openai_envelope

STATUS_BY_EXCEPTION = {
    "ValidationException": 400,
    "ServiceQuotaExceededException": 400,
    "AccessDeniedException": 403,
    "ResourceNotFoundException": 404,
    "ModelTimeoutException": 408,
    "ModelErrorException": 424,
    "ModelStreamErrorException": 424,
    "ThrottlingException": 429,
    "ModelNotReadyException": 429,
    "InternalServerException": 500,
    "ServiceUnavailableException": 503,
}


def exception_name(value: str | None) -> str | None:
    """``ThrottlingException`` of ``ThrottlingException:http://...``, of the stream's
    ``throttlingException`` or of ``com.amazon.coral#ThrottlingException``."""
    if not value:
        return None
    name = value.split(":", 1)[0].rsplit("#", 1)[-1].strip()
    return name[:1].upper() + name[1:] if name else None


def message_of(data: Any) -> str | None:
    if not isinstance(data, dict):
        return None
    for key in ("message", "Message"):
        if isinstance(data.get(key), str) and data[key]:
            return str(data[key])
    return None


def map_error(
    status: int, body: ErrorBody, error_type: str | None = None
) -> tuple[int, dict[str, Any]]:
    """A Bedrock error answer as (status for the client, OpenAI error envelope)."""
    data = body.data if body.is_json else None
    name = exception_name(error_type)
    if name is None and isinstance(data, dict) and isinstance(data.get("__type"), str):
        name = exception_name(data["__type"])
    message = message_of(data)
    if name is None and message is None:
        return status, openai_envelope(status, body)
    if status < 400:
        status = STATUS_BY_EXCEPTION.get(name or "", 502)
    text = message or f"the AWS Bedrock upstream answered HTTP {status}"
    return status, envelope(status, text, code=name or "upstream_error")


def stream_exception(name: str | None, data: Any) -> tuple[int, dict[str, Any]]:
    """An exception message inside a ConverseStream: (its status, envelope)."""
    exception = exception_name(name) or "InternalServerException"
    status = STATUS_BY_EXCEPTION.get(exception, 500)
    text = message_of(data) or "the AWS Bedrock upstream reported an error mid-stream"
    return status, envelope(status, text, code=exception)
