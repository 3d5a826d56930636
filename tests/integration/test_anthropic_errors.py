"""Anthropic behind the OpenAI API, errors: its error answers and error events become the
gateway's (statuses, envelopes, retries of 529, fallbacks), and what Anthropic cannot do
is refused before any call. A misbehaving upstream (compressed bodies, undecodable
events) is test_anthropic_upstream_errors.py's."""

from __future__ import annotations

import json
from decimal import Decimal

import httpx
import openai
import pytest

from tests.integration.anthropic_support import MESSAGES, _stream_rows, gateway
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import TEST_KEY, RunningGateway
from tests.support.sse import sse_data

__all__ = ["gateway"]


# --- whole answers ------------------------------------------------------------------------


def test_an_invalid_request_error_maps_to_a_400_envelope_unretried(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave(
        "claude-haiku",
        fail_always=400,
        error_body={
            "type": "error",
            "error": {"type": "invalid_request_error", "message": "max_tokens: too large"},
        },
    )
    with pytest.raises(openai.BadRequestError) as caught:
        gateway.client().chat.completions.create(model="claude-chat", messages=MESSAGES)
    error = caught.value.body
    assert isinstance(error, dict)
    assert error["message"] == "max_tokens: too large"
    assert error["type"] == "invalid_request_error"
    assert error["code"] == "invalid_request_error"
    assert upstream.calls["claude-haiku"] == 1
    (row,) = gateway.rows()
    assert row["error_class"] == "upstream_4xx" and row["http_status"] == 400


def test_an_authentication_error_is_the_gateways_502_upstream_auth_failed(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("claude-haiku", fail_always=401)
    with pytest.raises(openai.InternalServerError) as caught:
        gateway.client().chat.completions.create(model="claude-chat", messages=MESSAGES)
    error = caught.value.body
    assert isinstance(error, dict) and error["code"] == "upstream_auth_failed"
    assert error["type"] == "api_error" and caught.value.status_code == 502
    assert "sk-ant-test" not in json.dumps(error)
    (row,) = gateway.rows()
    assert row["http_status"] == 502 and row["error_class"] == "upstream_auth"


def test_overloaded_529_is_retried_then_answered(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("claude-haiku", fail_statuses=[529], retry_after="0")
    answer = gateway.client().chat.completions.create(model="claude-chat", messages=MESSAGES)
    assert answer.choices[0].message.content
    assert upstream.calls["claude-haiku"] == 2
    (row,) = gateway.rows()
    assert row["success"] == 1 and row["provider_retries"] == 1


def test_persistent_529_answers_502_upstream_error(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("claude-haiku", fail_always=529, retry_after="0")
    with pytest.raises(openai.InternalServerError) as caught:
        gateway.client().chat.completions.create(model="claude-chat", messages=MESSAGES)
    assert caught.value.status_code == 502
    error = caught.value.body
    assert isinstance(error, dict) and error["code"] == "upstream_error"
    assert "claude/haiku: http_5xx" in error["message"]
    assert upstream.calls["claude-haiku"] == 2  # maxRetries: 1
    (row,) = gateway.rows()
    assert row["error_class"] == "upstream_5xx" and row["http_status"] == 502
    assert row["provider_retries"] == 1


# --- streams ------------------------------------------------------------------------------


def test_an_error_event_mid_stream_ends_with_an_sse_error_and_no_done(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("claude-haiku", content="a b c d e f", stream_error_after=2)
    status, events = sse_data(
        gateway.url, "chat/completions", {"model": "claude-chat", "messages": MESSAGES}
    )
    assert status == 200
    assert "[DONE]" not in events
    text = "".join(
        c["choices"][0]["delta"].get("content") or ""
        for c in map(json.loads, events[:-1])
        if c["choices"]
    )
    assert text == "a b"
    error = json.loads(events[-1])["error"]
    assert error["message"] == "Overloaded" and error["type"] == "api_error"
    assert upstream.calls["claude-haiku"] == 1  # bytes were sent: no retry, no fallback
    (row,) = _stream_rows(gateway)
    assert row["success"] == 0 and row["error_class"] == "upstream_5xx"


def test_an_error_as_the_first_event_falls_back(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("claude-haiku", stream_error_after=0)
    upstream.behave("small-model", content="rescued", prompt_tokens=10, completion_tokens=2)
    chunks = list(
        gateway.client().chat.completions.create(
            model="claude-rescued", messages=MESSAGES, stream=True
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "rescued"
    assert upstream.calls["claude-haiku"] == 2  # retried once, as a 529
    (row,) = _stream_rows(gateway)
    assert (row["model"], row["served_model"]) == ("haiku", "small")
    assert row["fallback_attempts"] == 1 and row["provider_retries"] == 1
    assert row["success"] == 1
    assert row["actual_cost"] == Decimal("0.0000027")  # 10·0.15 + 2·0.60 per 1M


def test_a_client_error_as_the_first_event_answers_its_status_not_a_stream(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave(
        "claude-haiku",
        stream_error_after=0,
        stream_error=("invalid_request_error", "prompt is too long"),
    )
    response = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        headers={"authorization": f"Bearer {TEST_KEY}"},
        json={"model": "claude-rescued", "messages": MESSAGES, "stream": True},
        timeout=20,
    )
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "prompt is too long"
    assert upstream.calls == {"claude-haiku": 1}  # the caller's fault: no retry, no fallback
    (row,) = gateway.rows()
    assert row["error_class"] == "upstream_4xx" and row["http_status"] == 400


def test_a_cut_anthropic_stream_ends_with_an_error_event(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("claude-haiku", content="a b c d e f", cut_after=2)
    status, events = sse_data(
        gateway.url, "chat/completions", {"model": "claude-chat", "messages": MESSAGES}
    )
    assert status == 200 and "[DONE]" not in events
    assert json.loads(events[-1])["error"]["code"] == "stream_cut"
    (row,) = _stream_rows(gateway)
    assert row["success"] == 0 and row["error_class"] == "stream_cut"


# --- refused before any call --------------------------------------------------------------


def test_embeddings_on_an_anthropic_model_are_refused_without_an_upstream_call(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    # The model declares no embeddings: refused before any adapter is asked.
    with pytest.raises(openai.BadRequestError) as caught:
        gateway.client().embeddings.create(model="claude-chat", input="hello")
    error = caught.value.body
    assert isinstance(error, dict) and error["code"] == "no_eligible_model"
    assert "embeddings" in error["message"]
    # Sent anyway (observe): the Anthropic adapter itself refuses, still without a call.
    with pytest.raises(openai.BadRequestError) as caught:
        gateway.client().embeddings.create(model="claude-observed", input="hello")
    error = caught.value.body
    assert isinstance(error, dict) and error["code"] == "unsupported_operation"
    assert "Anthropic" in error["message"] and "embeddings" in error["message"]
    assert upstream.received == []
    rows = gateway.rows(expect=2)
    assert [(r["http_status"], r["operation"]) for r in rows] == [(400, "embedding")] * 2


def test_a_request_anthropic_cannot_express_is_a_400_before_any_call(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        gateway.client().chat.completions.create(model="claude-chat", messages=MESSAGES, n=2)
    error = caught.value.body
    assert isinstance(error, dict)
    assert (error["code"], error["param"]) == ("invalid_request", "n")
    assert upstream.received == []
