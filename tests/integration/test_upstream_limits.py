"""Upstream answers are read up to a cap: a whole answer (``server.maxUpstreamBodyBytes``)
and one stream event (``server.maxUpstreamEventBytes``). Past it the gateway stops
reading, closes the upstream and answers ``invalid_upstream_response``: a 502 when
nothing reached the client yet (after a fallback had its chance), else an SSE error
event and no ``[DONE]``."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import TEST_KEY, RunningGateway, gateway_yaml
from tests.support.openai_schema import assert_valid

MiB = 1024 * 1024
BODY_CAP = MiB
EVENT_CAP = 64 * 1024
MESSAGES: list[Any] = [{"role": "user", "content": "Say hello."}]


@pytest.fixture
def gateway(upstream: FakeUpstream, sqlite_url: str) -> Iterator[RunningGateway]:
    yaml = gateway_yaml(
        upstream.url,
        sqlite_url,
        providers=f"""
  - {{id: other, adapter: openai, baseUrl: "{upstream.url}/v1"}}
  - {{id: claude, adapter: anthropic, baseUrl: "{upstream.url}/anthropic/v1",
     apiKey: "sk-ant-test", maxRetries: 2}}""",
        models="""
  - {id: backup, provider: other, name: backup-model, capabilities: [chat, streaming]}
  - {id: haiku, provider: claude, name: claude-haiku, capabilities: [chat, streaming]}""",
        configurations="""
  - {id: guarded, mode: fixed, model: small, fallback: [backup-chat]}
  - {id: backup-chat, mode: fixed, model: backup}
  - {id: claude-chat, mode: fixed, model: haiku}""",
    ).replace(
        "server: {requestTimeoutSeconds: 20}",
        "server: {requestTimeoutSeconds: 20, "
        f"maxUpstreamBodyBytes: {BODY_CAP}, maxUpstreamEventBytes: {EVENT_CAP}}}",
    )
    running = RunningGateway(yaml)
    yield running
    running.stop()


def _stopped_early(upstream: FakeUpstream, tried: int) -> int:
    """Bytes the upstream got to write of its oversize answer before the gateway hung up."""
    deadline = time.monotonic() + 10
    while not upstream.oversize_sent and time.monotonic() < deadline:
        time.sleep(0.02)
    assert upstream.oversize_sent, "the upstream is still being read"
    (sent,) = upstream.oversize_sent
    assert sent < tried // 4  # socket buffers aside, nothing more was read
    return sent


def _raw_stream(gateway: RunningGateway, model: str) -> tuple[int, str]:
    with httpx.stream(
        "POST",
        f"{gateway.url}/v1/chat/completions",
        headers={"authorization": f"Bearer {TEST_KEY}"},
        json={"model": model, "messages": MESSAGES, "stream": True},
        timeout=20,
    ) as response:
        return response.status_code, response.read().decode()


def _data(text: str) -> list[str]:
    return [e.removeprefix("data: ") for e in text.split("\n\n") if e.strip()]


def test_a_whole_answer_past_the_cap_is_a_502_and_the_upstream_is_not_read_further(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", oversize_bytes=64 * MiB)
    with pytest.raises(openai.InternalServerError) as caught:
        gateway.client().chat.completions.create(model="chat", messages=MESSAGES)
    assert caught.value.status_code == 502
    error = caught.value.response.json()["error"]
    assert error["code"] == "invalid_upstream_response" and error["type"] == "api_error"
    _stopped_early(upstream, 64 * MiB)
    assert upstream.calls["small-model"] == 1  # the same answer again: not retried
    (row,) = gateway.rows(expect=1)
    assert (row["success"], row["http_status"]) == (0, 502)
    assert row["error_class"] == "invalid_upstream_response"


def test_an_answer_that_declares_a_length_past_the_cap_is_refused(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", raw_answer=b'{"pad": "' + b"x" * (2 * BODY_CAP) + b'"}')
    response = gateway.client().chat.completions.with_raw_response
    with pytest.raises(openai.InternalServerError) as caught:
        response.create(model="chat", messages=MESSAGES)
    assert caught.value.response.json()["error"]["code"] == "invalid_upstream_response"
    (row,) = gateway.rows(expect=1)
    assert row["error_class"] == "invalid_upstream_response"


def test_a_fallback_answers_when_the_primary_answer_is_too_large(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", oversize_bytes=8 * MiB)
    answer = gateway.client().chat.completions.create(model="guarded", messages=MESSAGES)
    assert answer.choices[0].message.content == "Hello from the fake upstream."
    assert upstream.calls == {"small-model": 1, "backup-model": 1}
    (row,) = gateway.rows(expect=1)
    assert row["success"] == 1 and row["served_model"] == "backup"
    assert row["fallback_attempts"] == 1


def test_a_stream_event_past_the_cap_ends_the_stream_with_an_error_event_and_no_done(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave(
        "small-model",
        stream_pieces=["Hello", " world"],
        oversize_bytes=16 * MiB,
        oversize_event_after=1,
    )
    status, text = _raw_stream(gateway, "chat")
    events = _data(text)
    assert status == 200 and "[DONE]" not in events
    assert json.loads(events[0])["choices"][0]["delta"]["content"] == "Hello"
    assert_valid(json.loads(events[-1]), "ErrorResponse")
    error = json.loads(events[-1])["error"]
    assert error["code"] == "invalid_upstream_response"
    assert str(EVENT_CAP) in error["message"]
    _stopped_early(upstream, 16 * MiB)
    (row,) = gateway.rows(expect=1)
    assert (row["success"], row["http_status"]) == (0, 200)
    assert row["error_class"] == "invalid_upstream_response"


def test_a_first_stream_event_past_the_cap_lets_a_fallback_answer_before_any_byte(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", oversize_bytes=4 * MiB, oversize_event_after=0)
    chunks = gateway.client().chat.completions.create(
        model="guarded", messages=MESSAGES, stream=True
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Hello from the fake upstream."
    (row,) = gateway.rows(expect=1)
    assert row["success"] == 1 and row["served_model"] == "backup"


def test_a_first_stream_event_past_the_cap_with_no_fallback_is_a_502(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", oversize_bytes=4 * MiB, oversize_event_after=0)
    status, text = _raw_stream(gateway, "chat")
    assert status == 502
    assert_valid(json.loads(text), "ErrorResponse")
    assert json.loads(text)["error"]["code"] == "invalid_upstream_response"
    assert upstream.calls["small-model"] == 1
    (row,) = gateway.rows(expect=1)
    assert row["error_class"] == "invalid_upstream_response"


def test_an_anthropic_stream_event_past_the_cap_ends_the_stream_with_an_error_event(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave(
        "claude-haiku",
        stream_pieces=["Hi", " there"],
        oversize_bytes=16 * MiB,
        oversize_event_after=1,
    )
    status, text = _raw_stream(gateway, "claude-chat")
    events = _data(text)
    assert status == 200 and "[DONE]" not in events
    assert json.loads(events[-1])["error"]["code"] == "invalid_upstream_response"
    _stopped_early(upstream, 16 * MiB)
    (row,) = gateway.rows(expect=1)
    assert row["success"] == 0 and row["error_class"] == "invalid_upstream_response"


def test_an_anthropic_whole_answer_past_the_cap_is_a_502(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("claude-haiku", oversize_bytes=8 * MiB)
    with pytest.raises(openai.InternalServerError) as caught:
        gateway.client().chat.completions.create(model="claude-chat", messages=MESSAGES)
    assert caught.value.response.json()["error"]["code"] == "invalid_upstream_response"
    assert upstream.calls["claude-haiku"] == 1  # maxRetries 2, yet not asked again
    (row,) = gateway.rows(expect=1)
    assert row["error_class"] == "invalid_upstream_response"
