"""Failures the happy path never shows: a circuit opening mid-call, unusable answers, broken
HTTP, reset connections, provider-key echoes, and the headers of failed answers."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import openai
import pytest

from tests.support.broken_server import BrokenServer
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import TEST_KEY, RunningGateway, gateway_yaml

MESSAGES = [{"role": "user", "content": "Say hello."}]
CHAT = {"model": "chat", "messages": MESSAGES}


def _gateway(
    upstream: FakeUpstream, sqlite_url: str, broken_url: str = "", threshold: int = 2
) -> RunningGateway:
    # The backup sits on a provider of its own: a circuit is per provider.
    providers = f"""  - {{id: other, adapter: openai, baseUrl: "{upstream.url}/v1"}}"""
    models = """  - {id: backup, provider: other, name: backup-model, capabilities: [chat],
     price: {input: 1.00, output: 2.00}}"""
    configurations = """  - {id: rescued, mode: fixed, model: small, fallback: [backup-chat]}
  - {id: backup-chat, mode: fixed, model: backup}"""
    if broken_url:
        providers += f"""
  - {{id: broken, adapter: openai, baseUrl: "{broken_url}/v1", maxRetries: 0}}"""
        models += "\n  - {id: wreck, provider: broken, name: wreck-model, capabilities: [chat]}"
        configurations += """
  - {id: wrecked, mode: fixed, model: wreck}
  - {id: wrecked-rescued, mode: fixed, model: wreck, fallback: [backup-chat]}"""
    yaml = gateway_yaml(
        upstream.url, sqlite_url, providers=providers, models=models, configurations=configurations
    ).replace(
        "circuitBreaker: {failureThreshold: 50, cooldownSeconds: 30}",
        f"circuitBreaker: {{failureThreshold: {threshold}, cooldownSeconds: 30}}",
    )
    return RunningGateway(yaml)


@pytest.fixture
def gateway(upstream: FakeUpstream, sqlite_url: str) -> Iterator[RunningGateway]:
    running = _gateway(upstream, sqlite_url)
    yield running
    running.stop()


def test_a_circuit_opening_during_the_retries_hands_over_to_the_fallback(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    # failureThreshold 2, maxRetries 2: the circuit opens before the third try.
    upstream.behave("small-model", fail_always=500, retry_after="0")
    raw = gateway.client().chat.completions.with_raw_response.create(
        model="rescued", messages=MESSAGES
    )
    assert raw.headers["x-gateway-model"] == "backup"
    (row,) = gateway.rows()
    assert row["served_model"] == "backup" and row["fallback_attempts"] == 1
    assert upstream.calls["small-model"] == 2


def test_concurrent_calls_meeting_an_open_circuit_all_reach_the_fallback(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", fail_always=500, retry_after="0", latency_ms=20)
    client = gateway.client()

    def call(_: int) -> str | None:
        raw = client.chat.completions.with_raw_response.create(model="rescued", messages=MESSAGES)
        return raw.headers.get("x-gateway-model")

    with ThreadPoolExecutor(10) as pool:
        served = list(pool.map(call, range(10)))
    assert served == ["backup"] * 10
    rows = gateway.rows(expect=10)
    assert all(r["success"] == 1 and r["http_status"] == 200 for r in rows)


def test_a_circuit_open_without_fallback_is_503_with_the_envelope(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", fail_always=500, retry_after="0")
    with pytest.raises(openai.InternalServerError):
        gateway.client().chat.completions.create(model="chat", messages=MESSAGES)
    with pytest.raises(openai.APIStatusError) as caught:  # the circuit is open now
        gateway.client().chat.completions.create(model="chat", messages=MESSAGES)
    assert caught.value.status_code == 503
    assert isinstance(caught.value.body, dict) and caught.value.body["code"] == "no_eligible_model"
    last = gateway.rows()[-1]
    assert last["error_class"] == "circuit_open" and last["provider"] is None


def test_an_unusable_answer_falls_back_and_alone_is_a_502_envelope(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", raw_answer=b"<html>oops</html>")
    with pytest.raises(openai.InternalServerError) as caught:
        gateway.client().chat.completions.create(model="chat", messages=MESSAGES)
    assert caught.value.status_code == 502
    assert isinstance(caught.value.body, dict) and caught.value.body["code"] == "upstream_error"
    assert gateway.rows()[-1]["error_class"] == "invalid_upstream_response"
    raw = gateway.client().chat.completions.with_raw_response.create(
        model="rescued", messages=MESSAGES
    )
    assert raw.headers["x-gateway-model"] == "backup"


@pytest.mark.parametrize(
    ("mode", "error_class"), [("garbage", "upstream_connect"), ("reset", "upstream_connect")]
)
def test_broken_http_and_reset_connections_are_upstream_failures(
    upstream: FakeUpstream, sqlite_url: str, mode: str, error_class: str
) -> None:
    broken = BrokenServer(mode)
    gateway = _gateway(upstream, sqlite_url, broken.url, threshold=50)
    try:
        response = httpx.post(
            f"{gateway.url}/v1/chat/completions",
            json={**CHAT, "model": "wrecked"},
            headers={"authorization": f"Bearer {TEST_KEY}"},
        )
        assert response.status_code == 502, response.text
        assert response.json()["error"]["code"] == "upstream_error"
        rescued = gateway.client().chat.completions.with_raw_response.create(
            model="wrecked-rescued", messages=MESSAGES
        )
        assert rescued.headers["x-gateway-model"] == "backup"
        with httpx.stream(
            "POST",
            f"{gateway.url}/v1/chat/completions",
            json={**CHAT, "model": "wrecked", "stream": True},
            headers={"authorization": f"Bearer {TEST_KEY}"},
        ) as streamed:
            streamed.read()
        assert streamed.status_code == 502
        rows = gateway.rows(expect=3)
        assert [r["error_class"] for r in rows] == [error_class, None, error_class]
        assert [r["http_status"] for r in rows] == [502, 200, 502]
    finally:
        gateway.stop()
        broken.close()


def test_a_provider_key_echoed_in_an_error_body_is_redacted(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave(
        "small-model",
        fail_always=400,
        error_body={
            "error": {
                "message": "Incorrect API key provided: sk-upstream-secret-42 (sk-ups****t-42).",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_api_key",
            }
        },
    )
    with pytest.raises(openai.BadRequestError) as caught:
        gateway.client().chat.completions.create(model="chat", messages=MESSAGES)
    text = caught.value.response.text
    assert "sk-upstream-secret-42" not in text and "****" not in text
    assert "[redacted]" in text


def test_failed_answers_name_the_configuration_and_what_was_attempted(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", fail_always=400)
    response = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        json=CHAT,
        headers={"authorization": f"Bearer {TEST_KEY}"},
    )
    assert response.status_code == 400
    assert response.headers["x-gateway-configuration"] == "chat"
    assert response.headers["x-gateway-provider"] == "fake"
    assert response.headers["x-gateway-model"] == "small"
    unknown = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        json={**CHAT, "model": "チャット"},
        headers={"authorization": f"Bearer {TEST_KEY}"},
    )
    assert unknown.status_code == 404  # the client's own text goes in no header
    assert "x-gateway-configuration" not in unknown.headers


def test_an_inbound_request_id_is_kept_as_sent(gateway: RunningGateway) -> None:
    request_id = "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1 a/b"
    raw = gateway.client().chat.completions.with_raw_response.create(
        model="chat", messages=MESSAGES, extra_headers={"x-request-id": request_id}
    )
    assert raw.headers["x-request-id"] == request_id
    assert gateway.rows()[0]["correlation_id"] == request_id
