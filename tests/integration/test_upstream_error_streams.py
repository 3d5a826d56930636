"""What a misbehaving upstream's stream becomes for the client: unreadable, compressed
or error events end the stream with a well-formed error event without the provider key,
or, before the first byte, fail over to a fallback."""

from __future__ import annotations

import json
import random

import openai
import pytest

from tests.integration.upstream_errors_support import (
    ESCAPED_KEY,
    MESSAGES,
    PROVIDER_KEY,
    _assert_no_key,
    _datas,
    _stream,
    _text,
    gateway,
)
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import RunningGateway

__all__ = ["gateway"]


def test_an_event_that_is_not_json_ends_the_stream_with_an_error_event(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave(
        "small-model", content="a b c d e f", inject_at=2, inject=b"data: <html>oops</html>\n\n"
    )
    status, body = _stream(gateway)
    assert status == 200
    assert "<html>" not in body and "[DONE]" not in body
    datas = _datas(body)
    assert _text(datas) == "a b"  # nothing after the bad event is relayed
    assert json.loads(datas[-1]) == {
        "error": {
            "message": "The upstream sent an event that is not JSON; the stream ends here.",
            "type": "api_error",
            "param": None,
            "code": "invalid_upstream_response",
        }
    }
    (row,) = gateway.rows(expect=1)
    assert row["success"] == 0 and row["error_class"] == "invalid_upstream_response"


def test_the_openai_sdk_reads_an_api_error_not_a_decode_crash(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", content="a b c d", inject_at=1, inject=b"data: {oops\n\n")
    stream = gateway.client().chat.completions.create(model="chat", messages=MESSAGES, stream=True)
    seen = []
    with pytest.raises(openai.APIError) as caught:
        for chunk in stream:
            seen.append(chunk.choices[0].delta.content if chunk.choices else None)
    assert seen == ["a"]
    assert "not JSON" in caught.value.message


def test_a_bad_first_event_is_a_retryable_failure_a_fallback_answers(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", inject_at=0, inject=b"data: <!DOCTYPE html>\n\n")
    upstream.behave("backup-model", content="rescued")
    status, body = _stream(gateway, "rescued")
    assert status == 200 and _text(_datas(body)) == "rescued"
    assert "DOCTYPE" not in body
    assert upstream.calls["small-model"] == 2  # retried (circuit threshold 2), then fell back
    (row,) = gateway.rows(expect=1)
    assert row["success"] == 1 and row["served_model"] == "backup"
    assert row["fallback_attempts"] == 1


def test_a_bad_first_event_without_fallback_answers_a_502_envelope(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", inject_at=0, inject=b"data: 42\n\n", retry_after="0")
    status, body = _stream(gateway)
    assert status == 502
    assert json.loads(body)["error"]["code"] == "upstream_error"
    (row,) = gateway.rows(expect=1)
    assert row["error_class"] == "invalid_upstream_response" and row["http_status"] == 502


def test_a_compressed_stream_is_never_relayed_a_fallback_answers(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    # Long and random enough that its gzip bytes hold what looks like blank lines: relayed,
    # they would reach the client as blocks of garbage.
    rng = random.Random(7)
    pieces = [f" {rng.getrandbits(64):x}" for _ in range(4000)]
    upstream.behave("small-model", gzip_stream=True, stream_pieces=pieces)
    upstream.behave("backup-model", content="rescued")
    status, body = _stream(gateway, "rescued")
    assert status == 200 and _text(_datas(body)) == "rescued"
    (row,) = gateway.rows(expect=1)
    assert row["success"] == 1 and row["served_model"] == "backup"
    status, body = _stream(gateway, "chat")  # the circuit is open now: nothing else to try
    assert status == 503 and "\x1f\x8b" not in body


def test_a_keep_alive_comment_first_is_relayed_and_the_stream_succeeds(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", content="a b", inject_at=0, inject=b": keep-alive\n\n")
    status, body = _stream(gateway)
    assert status == 200 and body.startswith(": keep-alive\n\n")
    assert _text(_datas(body)) == "a b" and body.endswith("data: [DONE]\n\n")
    (row,) = gateway.rows(expect=1)
    assert row["success"] == 1


def test_an_upstream_error_event_mid_stream_is_relayed_as_a_redacted_envelope(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    event = (
        '{"error": {"message": "quota of ' + ESCAPED_KEY + ' exhausted", "code": 429},'
        ' "user_id": "acct-7"}'
    )
    upstream.behave(
        "small-model", content="a b c d", inject_at=2, inject=f"data: {event}\n\n".encode()
    )
    status, body = _stream(gateway)
    assert status == 200 and "[DONE]" not in body
    _assert_no_key(body)
    datas = _datas(body)
    assert _text(datas) == "a b"
    assert json.loads(datas[-1]) == {
        "error": {
            "message": "quota of [redacted] exhausted",
            "type": "api_error",
            "param": None,
            "code": 429,
        }
    }
    (row,) = gateway.rows(expect=1)
    assert row["success"] == 0 and row["error_class"] == "upstream_5xx"


def test_an_error_named_event_with_text_data_becomes_an_envelope(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    inject = f"event: error\ndata: <b>boom</b> for {PROVIDER_KEY}\n\n".encode()
    upstream.behave("small-model", content="a b c", inject_at=1, inject=inject)
    _, body = _stream(gateway)
    error = json.loads(_datas(body)[-1])["error"]
    assert error["code"] == "upstream_error" and error["type"] == "api_error"
    assert "boom for [redacted]" in error["message"] and "<b>" not in error["message"]


def test_a_cut_stream_ends_with_the_stream_cut_envelope(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", content="a b c d", cut_after=2)
    _, body = _stream(gateway)
    error = json.loads(_datas(body)[-1])["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert (error["type"], error["code"]) == ("api_error", "stream_cut")
