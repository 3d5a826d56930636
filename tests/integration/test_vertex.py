"""Vertex AI behind the OpenAI API: the openai SDK → the gateway → a fake Vertex AI whose
OAuth endpoint verifies the service account's signed JWT. Gemini and Claude models whole
and streamed, a thinking tool loop, embeddings through :predict, throttling retried, one
token for many calls, each call priced."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.integration.gemini_support import MESSAGES, TOOLS, fresh_gemini, gemini
from tests.support.fake_gemini import LOCATION, PROJECT, Failure, FakeGemini, Turn
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import RunningGateway, gateway_yaml, running_gateway

__all__ = ["fresh_gemini", "gemini"]

USAGE = {"promptTokenCount": 1000, "cachedContentTokenCount": 200, "candidatesTokenCount": 100}
# gemini-flash on vertex: 800·0.30 + 200·0.03 + 100·2.50 = 496 per 1M
USAGE_COST = Decimal("0.000496")


@pytest.fixture
def vertex(
    fresh_gemini: FakeGemini, upstream: FakeUpstream, sqlite_url: str, tmp_path: Path
) -> Iterator[RunningGateway]:
    account = tmp_path / "service-account.json"
    fresh_gemini.service_account(account)
    providers = (
        f'  - {{id: gcp, adapter: vertex, baseUrl: "{fresh_gemini.url}/v1", project: {PROJECT},\n'
        f'     location: {LOCATION}, credentialsFile: "{account}", timeoutSeconds: 5}}\n'
    )
    yaml_text = gateway_yaml(
        upstream.url,
        sqlite_url,
        providers=providers,
        models="""
  - {id: vflash, provider: gcp, name: gemini-2.5-flash, capabilities: [chat, tools, streaming],
     price: {input: 0.30, output: 2.50, cacheRead: 0.03}}
  - {id: vthinker, provider: gcp, name: gemini-3-pro-thinking, capabilities: [chat, tools],
     price: {input: 2.00, output: 12.00}}
  - {id: vclaude, provider: gcp, name: claude-sonnet-4-5, capabilities: [chat, streaming],
     maxOutputTokens: 1024, price: {input: 3.00, output: 15.00}}
  - {id: vembed, provider: gcp, name: text-embedding-005, capabilities: [embeddings],
     price: {input: 0.10, output: 0}}""",
        configurations="""
  - {id: v-chat, mode: fixed, model: vflash}
  - {id: v-think, mode: fixed, model: vthinker}
  - {id: v-claude, mode: fixed, model: vclaude}
  - {id: v-embed, mode: fixed, model: vembed}""",
    )
    with running_gateway(yaml_text) as running:
        yield running


def _vertex_path(publisher: str, model: str, method: str) -> str:
    return (
        f"/v1/projects/{PROJECT}/locations/{LOCATION}/publishers/{publisher}/models/"
        f"{model}:{method}"
    )


def test_gemini_on_vertex_whole_and_streamed_with_one_token_for_every_call(
    vertex: RunningGateway, gemini: FakeGemini
) -> None:
    gemini.script(
        "gemini-2.5-flash",
        Turn(parts=[{"text": "Hello from Vertex."}], usage=USAGE),
        Turn(parts=[{"text": "Streamed from Vertex."}], usage=USAGE),
    )
    client = vertex.client()
    raw = client.chat.completions.with_raw_response.create(model="v-chat", messages=MESSAGES)
    answer = raw.parse()
    assert answer.choices[0].message.content == "Hello from Vertex."
    assert Decimal(raw.headers["x-gateway-cost-usd"]) == USAGE_COST
    sent = gemini.last("generateContent")
    assert sent.path == _vertex_path("google", "gemini-2.5-flash", "generateContent")
    headers = {k.lower(): v for k, v in sent.headers.items()}
    assert headers["authorization"] == "Bearer ya29.fake-0"
    assert "x-goog-api-key" not in headers
    assert sent.body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}

    chunks = list(
        client.chat.completions.create(
            model="v-chat", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Streamed from Vertex."
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens == 1000
    assert gemini.last().query == {"alt": "sse"}
    assert gemini.token_requests == 1  # the token is kept, not fetched per call
    rows = vertex.rows(expect=2)
    assert [(r["adapter_type"], r["actual_cost"]) for r in rows] == [("vertex", USAGE_COST)] * 2


def test_a_thinking_tool_loop_on_vertex_round_trips_the_signature(
    vertex: RunningGateway, gemini: FakeGemini
) -> None:
    gemini.script(
        "gemini-3-pro-thinking",
        Turn(parts=[{"functionCall": {"name": "lookup", "args": {"q": "x"}}}]),
        Turn(parts=[{"text": "x is a letter."}]),
    )
    client = vertex.client()
    first = client.chat.completions.create(
        model="v-think", messages=MESSAGES, tools=TOOLS, reasoning_effort="low"
    )
    (call,) = first.choices[0].message.tool_calls or []
    history = [
        *MESSAGES,
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "a letter"},
    ]
    second = client.chat.completions.create(model="v-think", messages=history, tools=TOOLS)
    assert second.choices[0].message.content == "x is a letter."
    model_turn = gemini.last().body["contents"][1]
    assert model_turn["parts"][0]["thoughtSignature"] in gemini.signatures


def test_claude_on_vertex_goes_through_raw_predict_with_vertex_anthropic_version(
    vertex: RunningGateway, gemini: FakeGemini
) -> None:
    usage = {"promptTokenCount": 100, "candidatesTokenCount": 20}
    gemini.script(
        "claude-sonnet-4-5",
        Turn(parts=[{"text": "Claude here."}], usage=usage),
        Turn(parts=[{"text": "Claude streaming here."}], usage=usage),
    )
    client = vertex.client()
    answer = client.chat.completions.create(model="v-claude", messages=MESSAGES, temperature=0.5)
    assert answer.choices[0].message.content == "Claude here."
    sent = gemini.last("rawPredict")
    assert sent.path == _vertex_path("anthropic", "claude-sonnet-4-5", "rawPredict")
    assert sent.body == {
        "anthropic_version": "vertex-2023-10-16",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Say hello."}]}],
        "system": "Be brief.",
        "temperature": 0.5,
    }
    chunks = list(
        client.chat.completions.create(
            model="v-claude", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Claude streaming here."
    assert gemini.last().method == "streamRawPredict"
    assert chunks[-1].usage is not None
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (100, 20)
    # 100·3.00 + 20·15.00 = 600 per 1M
    rows = vertex.rows(expect=2)
    assert [r["actual_cost"] for r in rows] == [Decimal("0.0006")] * 2


def test_embeddings_on_vertex_use_predict_and_its_token_counts(
    vertex: RunningGateway, gemini: FakeGemini
) -> None:
    result = vertex.client().embeddings.create(model="v-embed", input=["ab", "abcd"], dimensions=2)
    assert [e.embedding for e in result.data] == [[2.0, 1.0], [4.0, 2.0]]
    assert result.usage.prompt_tokens == 6
    sent = gemini.last("predict")
    assert sent.path == _vertex_path("google", "text-embedding-005", "predict")
    assert sent.body == {
        "instances": [{"content": "ab"}, {"content": "abcd"}],
        "parameters": {"outputDimensionality": 2},
    }
    (row,) = vertex.rows()
    assert row["usage_source"] == "provider" and row["actual_input_tokens"] == 6
    assert row["actual_cost"] == Decimal("0.0000006")


def test_throttling_on_vertex_is_retried_and_refusals_relayed(
    vertex: RunningGateway, gemini: FakeGemini
) -> None:
    gemini.script(
        "gemini-2.5-flash",
        Failure(429, "RESOURCE_EXHAUSTED", "Quota exceeded", retry_delay="0.01s"),
        Turn(parts=[{"text": "Fine now."}]),
        Failure(400, "INVALID_ARGUMENT", "Unsupported thing."),
    )
    client = vertex.client()
    answer = client.chat.completions.create(model="v-chat", messages=MESSAGES)
    assert answer.choices[0].message.content == "Fine now."
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="v-chat", messages=MESSAGES)
    body: Any = refused.value.body
    assert (body["code"], body["message"]) == ("INVALID_ARGUMENT", "Unsupported thing.")
    rows = vertex.rows()
    assert rows[0]["provider_retries"] == 1 and rows[0]["success"] == 1
    assert rows[1]["http_status"] == 400


def test_a_service_account_the_token_endpoint_refuses_fails_without_leaking_it(
    gemini: FakeGemini, upstream: FakeUpstream, sqlite_url: str, tmp_path: Path
) -> None:
    gemini.reset()
    account = tmp_path / "service-account.json"
    gemini.service_account(account)
    data = json.loads(account.read_text())
    gemini.service_account(tmp_path / "other.json")  # the endpoint now knows another key
    providers = (
        f'  - {{id: gcp, adapter: vertex, baseUrl: "{gemini.url}/v1", project: {PROJECT},\n'
        f'     location: {LOCATION}, credentialsFile: "{account}", maxRetries: 0}}\n'
    )
    yaml_text = gateway_yaml(
        upstream.url,
        sqlite_url,
        providers=providers,
        models="  - {id: vflash, provider: gcp, name: gemini-2.5-flash, capabilities: [chat]}",
        configurations="  - {id: v-chat, mode: fixed, model: vflash}",
    )
    with running_gateway(yaml_text) as running:
        with pytest.raises(openai.APIStatusError) as failed:
            running.client().chat.completions.create(model="v-chat", messages=MESSAGES)
        assert failed.value.status_code >= 500
        assert data["private_key"][40:80] not in str(failed.value.body)
        (row,) = running.rows()
        assert row["error_class"] == "upstream_auth"
    assert not [r for r in gemini.received if r.method == "generateContent"]


def test_a_token_vertex_refuses_is_dropped_and_the_next_call_fetches_another(
    vertex: RunningGateway, gemini: FakeGemini
) -> None:
    client = vertex.client()
    client.chat.completions.create(model="v-chat", messages=MESSAGES)
    assert gemini.token_requests == 1
    gemini.tokens.clear()  # revoked: the API answers 401 UNAUTHENTICATED
    with pytest.raises(openai.APIStatusError) as failed:
        client.chat.completions.create(model="v-chat", messages=MESSAGES)
    assert failed.value.status_code == 502
    assert gemini.token_requests == 1  # the refused call is not retried on the same provider
    answer = client.chat.completions.create(model="v-chat", messages=MESSAGES)
    assert answer.choices[0].message.content == "Hello from Gemini."
    assert gemini.token_requests == 2
    headers = {k.lower(): v for k, v in gemini.last().headers.items()}
    assert headers["authorization"] == "Bearer ya29.fake-0"  # the first of the fake's new set
    assert [r["error_class"] for r in vertex.rows()] == [None, "upstream_auth", None]
