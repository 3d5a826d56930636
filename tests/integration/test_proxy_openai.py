"""The proxy end to end: the openai SDK → the gateway → a fake upstream, rows read back."""

from __future__ import annotations

import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import httpx
import openai
import pytest

from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import OTHER_KEY, TEST_KEY, RunningGateway, gateway_yaml

MESSAGES = [{"role": "user", "content": "Say hello."}]


@pytest.fixture
def gateway(upstream: FakeUpstream, sqlite_url: str) -> Iterator[RunningGateway]:
    running = RunningGateway(
        gateway_yaml(
            upstream.url,
            sqlite_url,
            models="""  - {id: backup, provider: fake, name: backup-model, capabilities: [chat],
     price: {input: 1.00, output: 2.00}}""",
            configurations="""
  - {id: with-fallback, mode: fixed, model: small, fallback: [backup-chat]}
  - {id: backup-chat, mode: fixed, model: backup}""",
        )
    )
    yield running
    running.stop()


def test_chat_is_forwarded_priced_and_recorded(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", prompt_tokens=1000, completion_tokens=500)
    raw = gateway.client().chat.completions.with_raw_response.create(
        model="chat", messages=MESSAGES, extra_headers={"x-request-id": "req-123"}
    )
    answer = raw.parse()
    assert answer.choices[0].message.content == "Hello from the fake upstream."
    assert answer.model == "small-model-2026-01-01"  # the upstream's, untouched
    # 1000 · 0.15/1M + 500 · 0.60/1M = 0.00015 + 0.0003
    assert raw.headers["x-gateway-cost-usd"] == "0.00045"
    assert answer.usage is not None and answer.usage.model_extra == {"cost": 0.00045}
    assert raw.headers["x-gateway-configuration"] == "chat"
    assert raw.headers["x-gateway-provider"] == "fake"
    assert raw.headers["x-gateway-model"] == "small"
    assert raw.headers["x-request-id"] == "req-123"

    sent = upstream.received[-1]
    assert sent.body["model"] == "small-model"
    assert sent.headers["Authorization"] == "Bearer sk-upstream-secret-42"
    assert TEST_KEY not in str(sent.headers)

    (row,) = gateway.rows()
    assert row["operation"] == "chat"
    assert row["correlation_id"] == "req-123"
    assert row["api_key_id"] == "alice"
    assert (row["provider"], row["model"], row["adapter_type"]) == ("fake", "small", "openai")
    assert (row["served_provider"], row["served_model"]) == ("fake", "small")
    assert row["response_model"] == "small-model-2026-01-01"
    assert row["success"] == 1 and row["http_status"] == 200 and row["error_class"] is None
    assert (row["actual_input_tokens"], row["actual_output_tokens"]) == (1000, 500)
    assert row["actual_cost"] == Decimal("0.00045")
    assert row["usage_source"] == "provider"
    assert row["routing_policy_mode"] == ""
    assert row["latency_ms"] > 0

    (daily,) = gateway.usage_daily()
    assert (daily["api_key_id"], daily["model"], daily["operation"]) == ("alice", "small", "chat")
    assert daily["requests"] == 1 and daily["cost"] == Decimal("0.00045")


def test_unknown_fields_pass_through_and_the_client_key_stays_home(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    gateway.client().chat.completions.create(
        model="chat", messages=MESSAGES, extra_body={"seed": 7, "vendor_flag": {"a": 1}}
    )
    sent = upstream.received[-1]
    assert sent.body["seed"] == 7 and sent.body["vendor_flag"] == {"a": 1}
    assert "x-request-id" in {k.lower() for k in sent.headers}


def test_stream_relays_chunks_and_records_actual_usage(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave(
        "small-model", content="one two three four", prompt_tokens=20, completion_tokens=4
    )
    stream = gateway.client().chat.completions.create(model="chat", messages=MESSAGES, stream=True)
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "one two three four"
    assert all(c.usage is None for c in chunks)  # the gateway's usage chunk is stripped
    assert upstream.received[-1].body["stream_options"] == {"include_usage": True}

    (row,) = gateway.rows(expect=1)
    assert row["operation"] == "stream" and row["success"] == 1
    assert (row["actual_input_tokens"], row["actual_output_tokens"]) == (20, 4)
    assert row["actual_cost"] == Decimal("0.0000054")  # 20·0.15/1M + 4·0.60/1M
    assert row["usage_source"] == "provider"
    assert row["time_to_first_token_ms"] is not None
    assert row["time_to_first_token_ms"] <= row["latency_ms"]


def test_stream_usage_chunk_reaches_a_client_that_asked_with_its_cost(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", prompt_tokens=1000, completion_tokens=500)
    stream = gateway.client().chat.completions.create(
        model="chat", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    )
    last = list(stream)[-1]
    assert last.choices == []
    assert last.usage is not None and last.usage.prompt_tokens == 1000
    assert last.usage.model_extra == {"cost": 0.00045}


def test_stream_without_reported_usage_is_estimated(
    gateway: RunningGateway, upstream: FakeUpstream, tiktoken_encodings: Path
) -> None:
    upstream.behave("small-model", report_usage=False, content="hello world")
    list(gateway.client().chat.completions.create(model="chat", messages=MESSAGES, stream=True))
    (row,) = gateway.rows(expect=1)
    assert row["success"] == 1 and row["usage_source"] == "estimated"
    assert row["actual_input_tokens"] is None and row["actual_cost"] is None
    assert row["estimated_output_tokens"] == 2  # "hello world" in cl100k_base
    (daily,) = gateway.usage_daily()
    assert daily["cost"] == 0 and daily["estimated_cost"] > 0


def test_embeddings_count_no_output(gateway: RunningGateway, upstream: FakeUpstream) -> None:
    upstream.behave("embed-model", prompt_tokens=50)
    raw = gateway.client().embeddings.with_raw_response.create(model="embed", input=["a", "b"])
    assert len(raw.parse().data) == 2
    assert raw.headers["x-gateway-cost-usd"] == "0.000001"  # 50 · 0.02/1M
    (row,) = gateway.rows()
    assert row["operation"] == "embedding"
    assert (row["actual_input_tokens"], row["actual_output_tokens"]) == (50, 0)


def test_legacy_completions(gateway: RunningGateway, upstream: FakeUpstream) -> None:
    upstream.behave("legacy-model", prompt_tokens=10, completion_tokens=10)
    answer = gateway.client().completions.create(model="complete", prompt="Once upon")
    assert answer.choices[0].text == "Hello from the fake upstream."
    (row,) = gateway.rows()
    assert row["operation"] == "completion"
    assert row["actual_cost"] == Decimal("0.000035")  # 10·1.5/1M + 10·2/1M


def test_legacy_completions_accept_max_tokens_0_to_score_a_prompt(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    """OpenAI's schema lets max_tokens be 0: with echo and logprobs it scores the prompt."""
    upstream.behave("legacy-model", content="Once upon", prompt_tokens=10, completion_tokens=0)
    client = gateway.client()
    answer = client.completions.create(
        model="complete", prompt="Once upon", max_tokens=0, echo=True, logprobs=2
    )
    assert answer.choices[0].text == "Once upon"
    sent = upstream.received[-1].body
    assert (sent["max_tokens"], sent["echo"], sent["logprobs"]) == (0, True, 2)
    (row,) = gateway.rows()
    assert row["http_status"] == 200 and row["usage_source"] == "provider"
    assert row["actual_cost"] == Decimal("0.000015")  # 10·1.5/1M, nothing generated

    with pytest.raises(openai.BadRequestError) as refused:  # the upper bound stays
        client.completions.create(model="complete", prompt="Once upon", max_tokens=2**31)
    assert refused.value.body["param"] == "max_tokens"  # type: ignore[index]
    with pytest.raises(openai.BadRequestError):  # and chat keeps its minimum of 1
        client.chat.completions.create(
            model="chat", messages=[{"role": "user", "content": "Hi"}], max_tokens=0
        )
    assert upstream.calls["legacy-model"] == 1


def test_retryable_failures_are_retried_then_answered(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", fail_statuses=[503, 500], retry_after="0")
    answer = gateway.client().chat.completions.create(model="chat", messages=MESSAGES)
    assert answer.choices[0].message.content
    assert upstream.calls["small-model"] == 3
    (row,) = gateway.rows()
    assert row["success"] == 1 and row["provider_retries"] == 2 and row["fallback_attempts"] == 0


def test_exhausted_retries_answer_502_listing_attempts(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", fail_always=500, retry_after="0")
    with pytest.raises(openai.InternalServerError) as caught:
        gateway.client().chat.completions.create(model="chat", messages=MESSAGES)
    assert caught.value.status_code == 502
    error = caught.value.body
    assert isinstance(error, dict) and error["code"] == "upstream_error"
    assert "fake/small: http_5xx" in error["message"]
    assert "sk-upstream-secret-42" not in error["message"]
    (row,) = gateway.rows()
    assert row["success"] == 0 and row["error_class"] == "upstream_5xx"
    assert row["http_status"] == 502 and row["provider_retries"] == 2
    assert row["served_model"] is None and row["model"] == "small"


def test_upstream_429_keeps_its_retry_after(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", fail_always=429, retry_after="0")
    with pytest.raises(openai.RateLimitError) as caught:
        gateway.client().chat.completions.create(model="chat", messages=MESSAGES)
    assert caught.value.response.headers["retry-after"] == "0"
    assert isinstance(caught.value.body, dict) and caught.value.body["code"] == "rate_limited"
    assert gateway.rows()[0]["error_class"] == "upstream_429"


def test_upstream_client_error_passes_through_unretried(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave(
        "small-model",
        fail_always=400,
        error_body={
            "error": {
                "message": "bad temperature",
                "type": "invalid_request_error",
                "param": "temperature",
                "code": "bad_temp",
            }
        },
    )
    with pytest.raises(openai.BadRequestError) as caught:
        gateway.client().chat.completions.create(model="chat", messages=MESSAGES)
    assert isinstance(caught.value.body, dict) and caught.value.body["code"] == "bad_temp"
    assert upstream.calls["small-model"] == 1
    (row,) = gateway.rows()
    assert row["error_class"] == "upstream_4xx" and row["http_status"] == 400


def test_a_timeout_answers_504(gateway: RunningGateway, upstream: FakeUpstream) -> None:
    upstream.behave("hasty-model", hang_seconds=2)  # the provider's timeoutSeconds is 0.5
    with pytest.raises(openai.APIStatusError) as caught:
        gateway.client().chat.completions.create(model="hasty-chat", messages=MESSAGES)
    assert caught.value.status_code == 504
    assert isinstance(caught.value.body, dict) and caught.value.body["code"] == "upstream_timeout"
    (row,) = gateway.rows()
    assert row["error_class"] == "upstream_timeout" and row["provider_retries"] == 1


def test_a_fallback_answers_and_is_priced_by_its_own_model(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", fail_always=503, retry_after="0")
    upstream.behave("backup-model", prompt_tokens=100, completion_tokens=100)
    raw = gateway.client().chat.completions.with_raw_response.create(
        model="with-fallback", messages=MESSAGES
    )
    assert raw.headers["x-gateway-model"] == "backup"
    assert raw.headers["x-gateway-cost-usd"] == "0.0003"  # 100·1/1M + 100·2/1M
    (row,) = gateway.rows()
    assert (row["configuration"], row["model"]) == ("with-fallback", "small")
    assert (row["served_configuration"], row["served_model"]) == ("backup-chat", "backup")
    assert row["fallback_attempts"] == 1 and row["success"] == 1
    assert row["actual_cost"] == Decimal("0.0003")


def test_a_mid_stream_cut_ends_with_an_error_event(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", content="a b c d e f", cut_after=2)
    with httpx.stream(
        "POST",
        f"{gateway.url}/v1/chat/completions",
        headers={"authorization": f"Bearer {TEST_KEY}"},
        json={"model": "chat", "messages": MESSAGES, "stream": True},
        timeout=20,
    ) as response:
        body = response.read().decode()
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["x-accel-buffering"] == "no"
    events = [e for e in body.split("\n\n") if e.strip()]
    assert events[-1].startswith('data: {"error"')
    assert "[DONE]" not in body
    (row,) = gateway.rows(expect=1)
    assert row["success"] == 0 and row["error_class"] == "stream_cut"


def test_a_stream_falls_back_before_its_first_byte(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", fail_always=502, retry_after="0")
    upstream.behave("backup-model", content="rescued")
    chunks = list(
        gateway.client().chat.completions.create(
            model="with-fallback", messages=MESSAGES, stream=True
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "rescued"
    (row,) = gateway.rows(expect=1)
    assert row["served_model"] == "backup" and row["fallback_attempts"] == 1


def test_a_client_disconnect_closes_upstream_and_is_recorded(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", stream_pieces=["x"] * 200, chunk_delay_ms=10)
    with httpx.stream(
        "POST",
        f"{gateway.url}/v1/chat/completions",
        headers={"authorization": f"Bearer {TEST_KEY}"},
        json={"model": "chat", "messages": MESSAGES, "stream": True},
        timeout=20,
    ) as response:
        for _ in response.iter_bytes():
            break  # read one piece, then hang up
    (row,) = gateway.rows(expect=1)
    assert row["error_class"] == "client_disconnected" and row["success"] == 0
    assert row["latency_ms"] < 1500  # recorded at the hang-up, not after the 2 s stream
    for _ in range(200):
        if upstream.streams_abandoned:
            break
        time.sleep(0.01)
    assert upstream.streams_abandoned == 1  # the gateway closed its upstream stream


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b"{not json", 400, "invalid_json"),
        (b"[1, 2]", 400, "invalid_json"),
        (b'{"messages": []}', 400, "invalid_request"),
        (b'{"model": "chat"}', 400, "invalid_request"),
        (b'{"model": "chat", "messages": "hi"}', 400, "invalid_request"),
        (b'{"model": "chat", "messages": [{"content": "x"}]}', 400, "invalid_request"),
        (
            b'{"model": "chat", "messages": [{"role": "user", "content": "x"}], "stream": "yes"}',
            400,
            "invalid_request",
        ),
        (
            b'{"model": "nope", "messages": [{"role": "user", "content": "x"}]}',
            404,
            "model_not_found",
        ),
    ],
)
def test_bad_input_gets_the_openai_envelope(
    gateway: RunningGateway, body: bytes, status: int, code: str
) -> None:
    response = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        content=body,
        headers={"authorization": f"Bearer {TEST_KEY}", "content-type": "application/json"},
    )
    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] == code
    assert error["type"] == "invalid_request_error"
    assert set(error) == {"message", "type", "param", "code"}


def test_missing_or_wrong_key_is_401(gateway: RunningGateway) -> None:
    with pytest.raises(openai.AuthenticationError) as caught:
        gateway.client(key="sk-wrong").chat.completions.create(model="chat", messages=MESSAGES)
    assert isinstance(caught.value.body, dict) and caught.value.body["code"] == "invalid_api_key"
    response = httpx.post(f"{gateway.url}/v1/chat/completions", json={"model": "chat"})
    assert response.status_code == 401
    assert gateway.rows() == []  # unauthenticated calls write no row


def test_a_key_outside_its_configurations_is_403_and_recorded(gateway: RunningGateway) -> None:
    with pytest.raises(openai.PermissionDeniedError) as caught:
        gateway.client(key=OTHER_KEY).completions.create(model="complete", prompt="x")
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["code"] == "configuration_not_allowed"
    (row,) = gateway.rows()
    assert row["http_status"] == 403 and row["api_key_id"] == "bob" and row["provider"] is None


def test_models_lists_what_the_key_may_use(gateway: RunningGateway) -> None:
    names = {m.id for m in gateway.client(key=OTHER_KEY).models.list()}
    assert names == {"chat"}
    assert {"chat", "embed", "complete"} <= {m.id for m in gateway.client().models.list()}


def test_health_readiness_and_metrics(gateway: RunningGateway, upstream: FakeUpstream) -> None:
    assert httpx.get(f"{gateway.url}/healthz").json() == {"status": "ok"}
    assert httpx.get(f"{gateway.url}/readyz").status_code == 200
    gateway.client().chat.completions.create(model="chat", messages=MESSAGES)
    text = httpx.get(f"{gateway.url}/metrics").text
    assert 'gateway_requests_total{operation="chat",status="200"} 1.0' in text
    assert "gateway_request_latency_seconds_bucket" in text
    assert 'gateway_upstream_latency_seconds_count{provider="fake"} 1.0' in text
    assert "gateway_telemetry_queue_depth" in text
    assert "gateway_telemetry_dropped_rows" in text


def test_unknown_routes_answer_the_envelope(gateway: RunningGateway) -> None:
    response = httpx.get(f"{gateway.url}/v1/nothing-here")
    assert response.status_code == 404
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_no_key_appears_in_any_row(gateway: RunningGateway, upstream: FakeUpstream) -> None:
    upstream.behave("small-model", fail_always=500, retry_after="0")
    with pytest.raises(openai.APIStatusError):
        gateway.client().chat.completions.create(model="chat", messages=MESSAGES)
    text = repr(gateway.rows()) + repr(gateway.usage_daily())
    for secret in (TEST_KEY, "sk-upstream-secret-42"):
        assert secret not in text
