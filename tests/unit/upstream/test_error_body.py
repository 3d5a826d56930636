"""Upstream error bodies: decoded, redacted and made an OpenAI envelope (pure)."""

from __future__ import annotations

import gzip
import json
import zlib
from typing import Any

import pytest

from gateway.upstream.error_body import (
    MAX_DECODED_BYTES,
    ErrorBody,
    UndecodableBody,
    decode_content,
    openai_envelope,
    read_error_body,
    redact_json,
    redact_text,
    stream_error_envelope,
)

KEY = "sk-proj-abcdef0123456789wxyz"
RAW = b'{"error": {"message": "hello"}}'


# --- Content-Encoding --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("encoded", "encoding"),
    [
        (RAW, None),
        (RAW, "identity"),
        (gzip.compress(RAW), "gzip"),
        (gzip.compress(RAW), "X-GZIP"),
        (zlib.compress(RAW), "deflate"),
        (zlib.compress(RAW)[2:-4], "deflate"),  # raw deflate, as some servers send it
        (gzip.compress(zlib.compress(RAW)), "deflate, gzip"),  # undone last applied first
    ],
)
def test_content_encodings_are_undone(encoded: bytes, encoding: str | None) -> None:
    assert decode_content(encoded, encoding) == RAW


@pytest.mark.parametrize(
    ("encoded", "encoding"), [(RAW, "br"), (RAW, "zstd"), (b"not gzip", "gzip"), (RAW, "deflate")]
)
def test_an_unknown_encoding_or_a_corrupt_body_is_refused(encoded: bytes, encoding: str) -> None:
    with pytest.raises(UndecodableBody):
        decode_content(encoded, encoding)


def test_a_compression_bomb_stops_at_the_decoded_limit() -> None:
    bomb = gzip.compress(b"a" * (MAX_DECODED_BYTES * 8))
    assert len(bomb) < 64 * 1024
    assert len(decode_content(bomb, "gzip")) == MAX_DECODED_BYTES


# --- redaction ---------------------------------------------------------------------------------


def test_the_key_and_its_masked_echoes_are_redacted_in_text() -> None:
    text = f"key {KEY}, shown as sk-proj-ab****wxyz or ****"
    assert redact_text(text, KEY) == "key [redacted], shown as [redacted] or [redacted]"
    assert redact_text("plain", None) == "plain"


def test_every_string_of_decoded_json_is_redacted_object_keys_too() -> None:
    data = {"a": [KEY, {"nested": f"x{KEY}y"}], KEY: 1, "n": 2, "b": None, "t": True}
    assert redact_json(data, KEY) == {
        "a": ["[redacted]", {"nested": "x[redacted]y"}],
        "[redacted]": 1,
        "n": 2,
        "b": None,
        "t": True,
    }


def test_a_json_escaped_key_is_caught_once_decoded() -> None:
    raw = b'{"error": {"message": "bad sk-\\u0070roj-abcdef0123456789wxyz"}}'
    assert KEY.encode() not in raw
    body = read_error_body(raw, "application/json", None, KEY)
    assert body.is_json and body.data == {"error": {"message": "bad [redacted]"}}


def test_text_that_is_not_json_is_unescaped_before_redaction() -> None:
    raw = b'{"truncated": "sk-\\u0070roj-abcdef0123456789wxyz and sk-&#112;roj-abcdef0123456789wxyz'
    body = read_error_body(raw, "text/plain", None, KEY)
    assert not body.is_json
    assert body.text == '{"truncated": "[redacted] and [redacted]'


def test_json_nested_deeper_than_the_decoder_goes_is_text_not_a_crash() -> None:
    body = read_error_body(b"[" * 5000 + b"]" * 5000, "application/json", None, KEY)
    assert not body.is_json


# --- the envelope ------------------------------------------------------------------------------


def _envelope(raw: bytes, content_type: str = "application/json", status: int = 400) -> Any:
    return openai_envelope(status, read_error_body(raw, content_type, None, KEY))["error"]


def test_an_openai_envelope_keeps_its_fields_and_gains_the_missing_ones() -> None:
    raw = json.dumps({"error": {"message": "m", "code": 7, "metadata": {"x": 1}}, "user_id": "u"})
    assert openai_envelope(404, read_error_body(raw.encode(), "", None, None)) == {
        "error": {
            "message": "m",
            "type": "invalid_request_error",
            "param": None,
            "code": 7,
            "metadata": {"x": 1},
        }
    }


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"error": "no such model"}', "no such model"),
        (b'{"detail": "Not Found"}', "Not Found"),
        (b'{"message": "slow down"}', "slow down"),
        (b'{"detail": [{"msg": "a required"}, {"msg": "b too"}, 3]}', "a required; b too"),
        (b'"bare string"', "bare string"),
        (b'{"error": {"message": 5}}', 'no known shape: {"error":{"message":5}}'),
        (b"[1, 2]", "no known shape: [1,2]"),
    ],
)
def test_other_json_shapes_are_wrapped_with_their_message(raw: bytes, message: str) -> None:
    error = _envelope(raw)
    assert error["code"] == "upstream_error" and error["type"] == "invalid_request_error"
    assert message in error["message"]


def test_an_html_page_gives_its_title_and_never_its_script() -> None:
    page = (
        b"<!doctype html><html><head><script>steal('" + KEY.encode() + b"')</script>"
        b"<title>\n  502 Bad &amp; Gateway &lt;script&gt;x()&lt;/script&gt;\n</title></head>"
        b"<body>cloudflare</body></html>"
    )
    error = _envelope(page, "text/html; charset=UTF-8", 502)
    assert error["type"] == "api_error"
    assert error["message"] == (
        "The upstream answered HTTP 502 with a non-JSON error body (text/html): 502 Bad & Gateway"
    )


def test_an_html_page_without_a_title_gives_no_excerpt() -> None:
    error = _envelope(b"<html><body><script>x()</script>down</body></html>", "text/html")
    assert error["message"].endswith("non-JSON error body (text/html).")


def test_plain_text_gives_a_short_clean_excerpt() -> None:
    text = b"line one\r\n\x1b[1mbold\x1b[0m <i>tag</i> <script>no()</script>" + b" x" * 500
    error = _envelope(text, "text/plain")
    message = error["message"]
    assert message.startswith(
        "The upstream answered HTTP 400 with a non-JSON error body (text/plain): "
        "line one bold tag x x"
    )
    assert message.endswith("…") and len(message) < 300
    assert not any(c in message for c in "<>\r\n\x1b") and "no()" not in message


def test_empty_and_undecodable_bodies_say_so() -> None:
    assert (
        _envelope(b"", "")["message"] == "The upstream answered HTTP 400 with an empty error body."
    )
    unreadable = read_error_body(b"\x00", "application/json", "br", KEY)
    assert unreadable == ErrorBody(content_type="application/json", unreadable="br")
    assert openai_envelope(400, unreadable)["error"]["message"] == (
        "The upstream answered HTTP 400 with an error body the gateway could not decode "
        "(content-encoding br)."
    )


def test_a_stream_error_event_becomes_an_envelope_without_the_key() -> None:
    chunk = {"error": {"message": f"gone {KEY}", "type": "server_error"}, "extra": 1}
    assert stream_error_envelope(chunk, "", KEY) == {
        "error": {"message": "gone [redacted]", "type": "server_error", "param": None, "code": None}
    }
    error = stream_error_envelope(None, f"<b>boom</b> {KEY}", KEY)["error"]
    assert error == {
        "message": "The upstream's stream reported an error with a non-JSON error body: "
        "boom [redacted]",
        "type": "api_error",
        "param": None,
        "code": "upstream_error",
    }


def test_a_stream_error_event_nested_too_deep_to_walk_still_becomes_an_envelope() -> None:
    deep: Any = KEY
    for _ in range(5000):
        deep = [deep]
    error = stream_error_envelope({"error": deep}, "", KEY)["error"]
    assert error["code"] == "upstream_error" and KEY not in error["message"]
