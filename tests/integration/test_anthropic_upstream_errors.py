"""A misbehaving Anthropic upstream behind the OpenAI API: refused credentials, compressed
error bodies, undecodable and key-echoing stream events. The client sees what it would
from an OpenAI-compatible upstream."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import (
    RunningGateway,
    anthropic_provider,
    gateway_yaml,
    running_gateway,
)
from tests.support.sse import sse_blocks

MESSAGES: list[Any] = [{"role": "user", "content": "Say hello."}]
ANTHROPIC_KEY = "sk-ant-test-0123456789"


@pytest.fixture
def gateway(upstream: FakeUpstream, sqlite_url: str) -> Iterator[RunningGateway]:
    yaml_text = gateway_yaml(
        upstream.url,
        sqlite_url,
        providers=anthropic_provider(
            upstream.url, "timeoutSeconds: 5, maxRetries: 1", key=ANTHROPIC_KEY
        ),
        models="""
  - {id: haiku, provider: claude, name: claude-haiku, capabilities: [chat],
     price: {input: 1.00, output: 5.00}}""",
        configurations="""
  - {id: claude-chat, mode: fixed, model: haiku}
  - {id: claude-rescued, mode: fixed, model: haiku, fallback: [chat]}""",
    )
    with running_gateway(yaml_text) as running:
        yield running


def _stream(gateway: RunningGateway, model: str) -> tuple[int, list[str]]:
    body = {"model": model, "messages": MESSAGES}
    status, blocks = sse_blocks(gateway.url, "chat/completions", body)
    return status, [b.removeprefix("data: ") for b in blocks if b.startswith("data: ")]


def _text(datas: list[str]) -> str:
    chunks = [json.loads(d) for d in datas if d != "[DONE]" and not d.startswith('{"error"')]
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_anthropic_key_is_a_502_upstream_auth_failed_and_falls_back(
    gateway: RunningGateway, upstream: FakeUpstream, status: int
) -> None:
    upstream.behave("claude-haiku", fail_always=status)
    with pytest.raises(openai.InternalServerError) as caught:
        gateway.client().chat.completions.create(model="claude-chat", messages=MESSAGES)
    body = caught.value.body
    assert isinstance(body, dict) and body["code"] == "upstream_auth_failed"
    assert "provider 'claude' rejected the gateway's credentials" in body["message"]
    assert upstream.calls["claude-haiku"] == 1  # maxRetries 1, but a retry cannot mend it
    answer = gateway.client().chat.completions.create(model="claude-rescued", messages=MESSAGES)
    assert answer.choices[0].message.content
    rows = gateway.rows(expect=2)
    assert [r["error_class"] for r in rows] == ["upstream_auth", None]
    assert rows[1]["served_model"] == "small" and rows[1]["fallback_attempts"] == 1


def test_a_gzip_anthropic_error_body_is_decoded_redacted_and_mapped(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    error = {"type": "invalid_request_error", "message": f"bad key {ANTHROPIC_KEY} in body"}
    upstream.behave(
        "claude-haiku",
        fail_always=400,
        error_raw=gzip.compress(json.dumps({"type": "error", "error": error}).encode()),
        error_headers={"content-encoding": "gzip"},
    )
    with pytest.raises(openai.BadRequestError) as caught:
        gateway.client().chat.completions.create(model="claude-chat", messages=MESSAGES)
    assert "content-encoding" not in caught.value.response.headers
    assert caught.value.body == {
        "message": "bad key [redacted] in body",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_request_error",
    }


def test_a_non_json_first_event_is_a_retryable_failure_a_fallback_answers(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("claude-haiku", inject_at=0, inject=b"event: ping\ndata: <html>\n\n")
    upstream.behave("small-model", content="rescued")
    status, datas = _stream(gateway, "claude-rescued")
    assert status == 200 and _text(datas) == "rescued"
    assert upstream.calls["claude-haiku"] == 2  # retried once (maxRetries 1), then fell back
    (row,) = gateway.rows(expect=1)
    assert row["success"] == 1 and row["served_model"] == "small"


def test_a_non_json_event_mid_stream_ends_with_invalid_upstream_response(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    bad = b"event: content_block_delta\ndata: {not json\n\n"
    upstream.behave("claude-haiku", content="a b c d", inject_at=2, inject=bad)
    status, datas = _stream(gateway, "claude-chat")
    assert status == 200 and "[DONE]" not in datas
    assert _text(datas) == "a b"  # the translator no longer skips the event silently
    assert json.loads(datas[-1]) == {
        "error": {
            "message": "The upstream sent an event that is not JSON; the stream ends here.",
            "type": "api_error",
            "param": None,
            "code": "invalid_upstream_response",
        }
    }  # the same event as from an OpenAI-compatible upstream
    (row,) = gateway.rows(expect=1)
    assert row["success"] == 0 and row["error_class"] == "invalid_upstream_response"


def test_an_anthropic_error_event_mid_stream_is_relayed_without_the_key(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave(
        "claude-haiku",
        content="a b c d",
        stream_error_after=2,
        stream_error=("overloaded_error", f"Overloaded for {ANTHROPIC_KEY}"),
    )
    status, datas = _stream(gateway, "claude-chat")
    assert status == 200 and ANTHROPIC_KEY not in "".join(datas)
    assert json.loads(datas[-1]) == {
        "error": {
            "message": "Overloaded for [redacted]",
            "type": "api_error",
            "param": None,
            "code": "overloaded_error",
        }
    }


def test_an_anthropic_error_as_the_first_event_is_relayed_without_the_key(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave(
        "claude-haiku",
        stream_error_after=0,
        stream_error=("invalid_request_error", f"prompt too long for {ANTHROPIC_KEY}"),
    )
    with pytest.raises(openai.BadRequestError) as caught:
        list(
            gateway.client().chat.completions.create(
                model="claude-chat", messages=MESSAGES, stream=True
            )
        )
    assert ANTHROPIC_KEY not in caught.value.response.text
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["message"] == "prompt too long for [redacted]"
