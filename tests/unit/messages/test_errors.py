"""Errors on /v1/messages in Anthropic's envelope and statuses."""

from __future__ import annotations

import json

import pytest

from gateway.domain.errors import envelope
from gateway.messages.errors import stream_error_event, translate_error


def _translated(status: int, body: object) -> tuple[int, dict[str, object]]:
    raw = json.dumps(body).encode() if not isinstance(body, bytes) else body
    status, out = translate_error(status, raw, "req-1")
    return status, json.loads(out)


@pytest.mark.parametrize(
    ("status", "code", "kind", "answered"),
    [
        (400, "invalid_request", "invalid_request_error", 400),
        (401, "invalid_api_key", "authentication_error", 401),
        (403, "configuration_not_allowed", "permission_error", 403),
        (404, "model_not_found", "not_found_error", 404),
        (413, "request_too_large", "request_too_large", 413),
        (429, "budget_exceeded", "rate_limit_error", 429),
        (429, "rate_limit_exceeded", "rate_limit_error", 429),
        (500, "internal_error", "api_error", 500),
        (502, "upstream_error", "api_error", 500),
        (503, "no_eligible_model", "api_error", 500),
        (504, "upstream_timeout", "timeout_error", 504),
        (529, "overloaded_error", "overloaded_error", 529),
        (405, "method_not_allowed", "invalid_request_error", 405),
    ],
)
def test_the_gateways_errors_take_anthropics_type_and_status(
    status: int, code: str, kind: str, answered: int
) -> None:
    got_status, body = _translated(status, envelope(status, "Why.", code))
    assert got_status == answered
    assert body == {
        "type": "error",
        "error": {"type": kind, "message": "Why."},
        "request_id": "req-1",
    }


def test_an_anthropic_envelope_keeps_its_type() -> None:
    upstream = {"type": "error", "error": {"type": "overloaded_error", "message": "Busy."}}
    assert _translated(529, upstream) == (
        529,
        {**upstream, "request_id": "req-1"},
    )


def test_a_body_that_is_no_envelope_is_typed_by_its_status() -> None:
    status, body = _translated(502, b"<html>bad gateway</html>")
    assert status == 500
    assert body["error"] == {"type": "api_error", "message": "The request failed with HTTP 502."}


def test_the_stream_error_event_is_anthropics() -> None:
    event = stream_error_event("Cut.")
    assert event.startswith(b"event: error\ndata: ")
    data = json.loads(event.split(b"data: ", 1)[1])
    assert data == {"type": "error", "error": {"type": "api_error", "message": "Cut."}}
