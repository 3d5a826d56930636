"""What the real server answers on its own conforms to OpenAI's published schema.

The echo demo adapter's answers and streams, cached answers, /v1/models and the error
envelopes, read raw off the wire and validated against the vendored OpenAPI schemas.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import TEST_KEY, RunningGateway, gateway_yaml, running_gateway
from tests.support.openai_schema import COMPLETION_STREAM_CHUNK, assert_valid
from tests.support.sse import sse_json

AUTH = {"authorization": f"Bearer {TEST_KEY}"}
MESSAGES: list[Any] = [{"role": "user", "content": "Say hello."}]


@pytest.fixture
def gateway(upstream: FakeUpstream, sqlite_url: str) -> Iterator[RunningGateway]:
    yaml_text = gateway_yaml(
        upstream.url,
        sqlite_url,
        providers="  - {id: demo, adapter: echo}",
        models="""
  - {id: demo-chat, provider: demo, name: demo-chat,
     capabilities: [chat, tools, streaming, completion], price: {input: 0.15, output: 0.60}}
  - {id: demo-embed, provider: demo, name: demo-embed, capabilities: [embeddings]}""",
        configurations="""
  - {id: echo-chat, mode: fixed, model: demo-chat}
  - {id: echo-cached, mode: fixed, model: demo-chat, cache: {ttlSeconds: 60}}
  - {id: echo-embed, mode: fixed, model: demo-embed}""",
    )
    with running_gateway(yaml_text) as running:
        yield running


def _post(gateway: RunningGateway, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{gateway.url}/v1/{path}", json=body, headers=AUTH, timeout=20)


def test_echo_chat_answers_and_chunks_conform(gateway: RunningGateway) -> None:
    whole = _post(gateway, "chat/completions", {"model": "echo-chat", "messages": MESSAGES})
    assert whole.status_code == 200
    assert_valid(whole.json(), "CreateChatCompletionResponse")
    assert whole.json()["usage"]["cost"] > 0  # the gateway's addition keeps it valid

    body = {"model": "echo-chat", "messages": MESSAGES, "stream_options": {"include_usage": True}}
    chunks = sse_json(gateway.url, "chat/completions", body)
    for chunk in chunks:
        assert_valid(chunk, "CreateChatCompletionStreamResponse")
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["cost"] > 0


def test_a_null_prompt_is_accepted_and_answered_in_conforming_shapes(
    gateway: RunningGateway,
) -> None:
    answer = gateway.client().completions.create(model="echo-chat", prompt=None)
    assert answer.choices[0].text == "echo: "
    raw = _post(gateway, "completions", {"model": "echo-chat", "prompt": None})
    assert raw.status_code == 200
    assert_valid(raw.json(), "CreateCompletionResponse")
    for chunk in sse_json(gateway.url, "completions", {"model": "echo-chat", "prompt": None}):
        assert_valid(chunk, COMPLETION_STREAM_CHUNK)
    (*_, row) = gateway.rows(expect=3)
    assert row["success"] == 1 and row["operation"] == "completion"


def test_a_null_prompt_is_forwarded_as_sent(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    answer = gateway.client().completions.create(model="complete", prompt=None)
    assert answer.choices[0].text == "Hello from the fake upstream."
    (sent,) = [r for r in upstream.received if r.path == "/v1/completions"]
    assert "prompt" in sent.body and sent.body["prompt"] is None


def test_echo_embeddings_conform(gateway: RunningGateway) -> None:
    response = _post(gateway, "embeddings", {"model": "echo-embed", "input": ["a", "b"]})
    assert response.status_code == 200
    assert_valid(response.json(), "CreateEmbeddingResponse")


def test_a_cached_answer_conforms(gateway: RunningGateway) -> None:
    body = {"model": "echo-cached", "messages": MESSAGES}
    first = _post(gateway, "chat/completions", body)
    second = _post(gateway, "chat/completions", body)
    assert second.headers["x-gateway-cache"] == "hit"
    assert_valid(second.json(), "CreateChatCompletionResponse")
    assert second.json()["choices"] == first.json()["choices"]


def test_the_model_list_conforms(gateway: RunningGateway) -> None:
    response = httpx.get(f"{gateway.url}/v1/models", headers=AUTH)
    assert_valid(response.json(), "ListModelsResponse")
    assert "echo-chat" in {m["id"] for m in response.json()["data"]}


def test_error_answers_conform(gateway: RunningGateway) -> None:
    url = gateway.url
    answers = [
        httpx.post(f"{url}/v1/chat/completions", json={}, headers={"authorization": "Bearer x"}),
        httpx.get(f"{url}/v1/models", headers={"authorization": "Bearer x"}),
        httpx.post(f"{url}/v1/chat/completions", content=b"{", headers=AUTH),
        _post(gateway, "chat/completions", {"model": "nope", "messages": MESSAGES}),
        _post(gateway, "completions", {"model": "echo-chat"}),
        _post(gateway, "embeddings", {"model": "echo-embed", "input": []}),
        httpx.get(f"{url}/v1/chat/completions", headers=AUTH),
        httpx.get(f"{url}/v1/no-such-route", headers=AUTH),
    ]
    assert [a.status_code for a in answers] == [401, 401, 400, 404, 400, 400, 405, 404]
    for answer in answers:
        assert_valid(answer.json(), "ErrorResponse")
