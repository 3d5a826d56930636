"""Every error envelope the gateway builds is OpenAI's published ErrorResponse."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterator

import pytest

from gateway.domain import errors
from gateway.domain.errors import GatewayError, NoEligibleModel
from gateway.domain.errors import envelope as build_envelope
from gateway.pipeline.stream import _error_event
from gateway.upstream.anthropic.errors import map_error
from gateway.upstream.error_body import read_error_body
from tests.support.openai_schema import assert_valid

# Classes whose constructor needs more than a message.
_MAKERS: dict[type[GatewayError], list[Callable[[], GatewayError]]] = {
    NoEligibleModel: [
        lambda: NoEligibleModel("nothing fits", caller_fault=True),
        lambda: NoEligibleModel("nothing is up", caller_fault=False),
    ],
}


def _subclasses(cls: type[GatewayError]) -> Iterator[type[GatewayError]]:
    yield cls
    for sub in cls.__subclasses__():
        yield from _subclasses(sub)


def _instances() -> Iterator[GatewayError]:
    for cls in _subclasses(GatewayError):
        makers = _MAKERS.get(cls)
        if makers is not None:
            yield from (make() for make in makers)
            continue
        yield cls("a message")
        if "param" in inspect.signature(cls).parameters:
            yield cls("a message", param="messages[0]")


def test_every_gateway_error_in_the_tree_is_covered() -> None:
    declared = {
        obj
        for _, obj in inspect.getmembers(errors, inspect.isclass)
        if issubclass(obj, GatewayError)
    }
    assert declared <= set(_subclasses(GatewayError))
    assert len(declared) >= 11


@pytest.mark.parametrize("error", list(_instances()), ids=lambda e: type(e).__name__)
def test_each_gateway_error_envelope_is_an_error_response(error: GatewayError) -> None:
    envelope = error.envelope()
    assert_valid(envelope, "ErrorResponse")
    assert envelope["error"]["code"] == error.code


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 429, 500, 529])
def test_anthropic_errors_become_error_responses(status: int) -> None:
    assert_valid(build_envelope(status, "m", "overloaded_error"), "ErrorResponse")
    assert_valid(build_envelope(status, "m", None), "ErrorResponse")
    for raw in (b'{"type":"error","error":{"type":"x","message":"y"}}', b"not json", b""):
        _, envelope = map_error(status, read_error_body(raw, "application/json", None, None))
        assert_valid(envelope, "ErrorResponse")


@pytest.mark.parametrize("code", ["stream_cut", "invalid_upstream_response"])
def test_the_mid_stream_error_event_is_an_error_response(code: str) -> None:
    payload = json.loads(_error_event("cut", code).decode().removeprefix("data: "))
    assert_valid(payload, "ErrorResponse")
    assert payload["error"]["code"] == code
