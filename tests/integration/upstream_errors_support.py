"""Helpers for the misbehaving-upstream tests: the gateway with a backup provider of its
own and a circuit that opens after two failures, the provider key as an error may echo
it, a request whole or streamed, a stream's data and text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import TEST_KEY, RunningGateway, gateway_yaml

MESSAGES: list[Any] = [{"role": "user", "content": "Say hello."}]
PROVIDER_KEY = "sk-upstream-secret-42"  # the fake provider's key in gateway_yaml
ESCAPED_KEY = "sk-\\u0075pstream-secret-42"  # the same key as JSON may spell it
HEADERS = {"authorization": f"Bearer {TEST_KEY}"}
# An error body that echoes the provider key, whole and masked.
ECHO = {
    "error": {
        "message": f"Bad request for key {PROVIDER_KEY} (sk-ups****t-42).",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "bad_messages",
    }
}


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
