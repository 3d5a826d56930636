"""Anthropic behind the OpenAI API: the openai SDK → the gateway → a fake Messages API."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import httpx
import openai
import pytest

from tests.support.fake_upstream import FakeUpstream, Received
from tests.support.gateway import (
    TEST_KEY,
    RunningGateway,
    anthropic_provider,
    gateway_yaml,
    running_gateway,
)
from tests.support.sse import sse_data

MESSAGES: list[Any] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Say hello."},
]
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a word up.",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
    }
]
PIXEL = (  # a 1×1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


@pytest.fixture
def gateway(upstream: FakeUpstream, sqlite_url: str) -> Iterator[RunningGateway]:
    claude = anthropic_provider(upstream.url, "priority: 60, timeoutSeconds: 5, maxRetries: 1")
    mistral = (
        f'  - {{id: mistral-co, adapter: mistral, baseUrl: "{upstream.url}/v1", apiKey: "sk-m"}}'
    )
    yaml_text = gateway_yaml(
        upstream.url,
        sqlite_url,
        providers=claude + mistral,
        models="""
  - {id: haiku, provider: claude, name: claude-haiku, capabilities: [chat, tools, vision],
     contextLength: 200000, maxOutputTokens: 2048,
     price: {input: 1.00, output: 5.00, cacheRead: 0.10, cacheWrite: 1.25}}
  - {id: mistral, provider: mistral-co, name: mistral-small, capabilities: [chat, tools]}""",
        configurations="""
  - {id: claude-chat, mode: fixed, model: haiku}
  - {id: claude-rescued, mode: fixed, model: haiku, fallback: [chat]}
  - {id: claude-observed, mode: fixed, model: haiku, operationCapabilityEnforcement: observe}
  - {id: routed, mode: criteria, policyMode: economy,
     criteria: {capabilities: [chat], adapterTypes: [openai, anthropic],
                preferLowestCost: true}}""",
    )
    with running_gateway(yaml_text) as running:
        yield running


def _sent(upstream: FakeUpstream) -> Received:
    (sent,) = [r for r in upstream.received if r.path == "/anthropic/v1/messages"][-1:]
    return sent


def _stream_rows(gateway: RunningGateway) -> list[dict[str, Any]]:
    """A stream's row lands just after the client read [DONE]: wait for it briefly."""
    for _ in range(200):
        rows = gateway.rows()
        if rows:
            return rows
        time.sleep(0.01)
    return []


def test_whole_chat_is_translated_priced_with_cache_tokens_and_recorded(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave(
        "claude-haiku",
        prompt_tokens=1000,
        cached_tokens=2000,
        cache_write_tokens=100,
        completion_tokens=500,
    )
    raw = gateway.client().chat.completions.with_raw_response.create(
        model="claude-chat", messages=MESSAGES, temperature=0.2, stop=["END"]
    )
    answer = raw.parse()
    assert answer.choices[0].message.content == "Hello from the fake upstream."
    assert answer.choices[0].finish_reason == "stop"
    assert answer.model == "claude-haiku"
    usage = answer.usage
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens) == (3100, 500)
    assert usage.prompt_tokens_details is not None
    assert usage.prompt_tokens_details.cached_tokens == 2000
    # 1000·1.00 + 2000·0.10 + 100·1.25 + 500·5.00 = 3825 per 1M
    assert raw.headers["x-gateway-cost-usd"] == "0.003825"
    assert usage.model_extra == {"cost": 0.003825}
    assert raw.headers["x-gateway-provider"] == "claude"

    sent = _sent(upstream)
    assert sent.body == {
        "model": "claude-haiku",
        "max_tokens": 2048,  # the model's maxOutputTokens
        "system": "Be brief.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Say hello."}]}],
        "temperature": 0.2,
        "stop_sequences": ["END"],
    }
    headers = {k.lower(): v for k, v in sent.headers.items()}
    assert headers["x-api-key"] == "sk-ant-test"
    assert headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in headers
    assert TEST_KEY not in str(sent.headers)

    (row,) = gateway.rows()
    assert (row["provider"], row["model"], row["adapter_type"]) == ("claude", "haiku", "anthropic")
    assert row["success"] == 1 and row["http_status"] == 200
    assert (row["actual_input_tokens"], row["actual_output_tokens"]) == (3100, 500)
    assert row["actual_cost"] == Decimal("0.003825")
    assert row["usage_source"] == "provider"
    assert row["response_model"] == "claude-haiku"


def test_a_tool_call_round_trips_as_tool_use_and_tool_result(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("claude-haiku", tool_call=True, content="Let me look.")
    client = gateway.client()
    first = client.chat.completions.create(
        model="claude-chat", messages=MESSAGES, tools=TOOLS, tool_choice="required"
    )
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls or []
    assert call.id == "toolu_1" and call.type == "function"
    assert call.function.name == "lookup"
    assert json.loads(call.function.arguments) == {"q": "x"}
    sent = _sent(upstream).body
    assert sent["tools"] == [
        {
            "name": "lookup",
            "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
            "description": "Look a word up.",
        }
    ]
    assert sent["tool_choice"] == {"type": "any"}

    upstream.behave("claude-haiku", content="It means x.")
    follow_up = [
        *MESSAGES,
        choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "x: a letter"},
    ]
    second = client.chat.completions.create(model="claude-chat", messages=follow_up, tools=TOOLS)
    assert second.choices[0].message.content == "It means x."
    assert _sent(upstream).body["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "x"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x: a letter"}
            ],
        },
    ]
    assert [r["operation"] for r in gateway.rows()] == ["tools", "tools"]


def test_image_parts_become_image_blocks(gateway: RunningGateway, upstream: FakeUpstream) -> None:
    content: list[Any] = [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PIXEL}"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
    ]
    gateway.client().chat.completions.create(
        model="claude-chat", messages=[{"role": "user", "content": content}]
    )
    assert _sent(upstream).body["messages"][0]["content"] == [
        {"type": "text", "text": "What is this?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PIXEL}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
    ]
    (row,) = gateway.rows()
    assert row["operation"] == "vision" and row["success"] == 1


def test_stream_translates_events_and_records_merged_usage(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave(
        "claude-haiku",
        content="one two three four",
        prompt_tokens=20,
        cached_tokens=10,
        cache_write_tokens=8,
        completion_tokens=4,
    )
    chunks = list(
        gateway.client().chat.completions.create(
            model="claude-chat", messages=MESSAGES, stream=True
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "one two three four"
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert all(c.usage is None for c in chunks)  # the usage chunk is stripped
    assert _sent(upstream).body["stream"] is True

    (row,) = _stream_rows(gateway)
    assert row["operation"] == "stream" and row["success"] == 1 and row["error_class"] is None
    # input from message_start (20 + 10 read + 8 written), output from message_delta (not 1)
    assert (row["actual_input_tokens"], row["actual_output_tokens"]) == (38, 4)
    # 20·1.00 + 10·0.10 + 8·1.25 + 4·5.00 = 51 per 1M
    assert row["actual_cost"] == Decimal("0.000051")
    assert row["usage_source"] == "provider"
    assert row["time_to_first_token_ms"] is not None


def test_stream_usage_chunk_reaches_a_client_that_asked_with_its_cost(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("claude-haiku", prompt_tokens=1000, cached_tokens=2000, completion_tokens=500)
    chunks = list(
        gateway.client().chat.completions.create(
            model="claude-chat",
            messages=MESSAGES,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == (3000, 500)
    assert last.usage.model_extra == {"cost": 0.0037}  # 1000 + 200 + 2500 per 1M
    assert "stream_options" not in _sent(upstream).body  # not an Anthropic parameter


def test_a_streamed_tool_call_reassembles_from_input_json_deltas(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave(
        "claude-haiku",
        content="Checking.",
        tool_call=True,
        tool_json_pieces=['{"q"', ': "x', 'yz"}'],
    )
    chunks = list(
        gateway.client().chat.completions.create(
            model="claude-chat", messages=MESSAGES, tools=TOOLS, stream=True
        )
    )
    calls: dict[int, dict[str, str]] = {}
    for chunk in chunks:
        for delta in (c.delta.tool_calls or [] for c in chunk.choices):
            for part in delta:
                entry = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                entry["id"] += part.id or ""
                if part.function is not None:
                    entry["name"] += part.function.name or ""
                    entry["arguments"] += part.function.arguments or ""
    assert calls == {0: {"id": "toolu_1", "name": "lookup", "arguments": '{"q": "xyz"}'}}
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    (row,) = _stream_rows(gateway)
    assert row["operation"] == "stream" and row["success"] == 1


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


def test_criteria_routing_across_adapter_types_selects_and_prices_the_anthropic_model(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("claude-haiku", tool_call=True, prompt_tokens=100, completion_tokens=20)
    raw = gateway.client().chat.completions.with_raw_response.create(
        model="routed", messages=MESSAGES, tools=TOOLS
    )
    assert raw.parse().choices[0].finish_reason == "tool_calls"
    assert raw.headers["x-gateway-model"] == "haiku"
    assert raw.headers["x-gateway-cost-usd"] == "0.0002"  # 100·1.00 + 20·5.00 per 1M
    assert [r.path for r in upstream.received] == ["/anthropic/v1/messages"]

    (row,) = gateway.rows()
    assert (row["configuration"], row["served_model"]) == ("routed", "haiku")
    assert row["adapter_type"] == "anthropic"
    assert row["routing_policy_mode"] == "economy"
    assert row["routing_candidates"] == 6  # every active model
    # embedder and legacy lack chat, hasty lacks tools, mistral is the wrong adapter type
    assert row["routing_rejections"] == (
        "ADAPTER_NOT_ALLOWED,CAPABILITY_MISSING,OPERATION_CAPABILITY_MISSING"
    )
    assert row["routing_cost_basis"] == "list" and row["routing_signal_cost"] == 1
    assert row["actual_cost"] == Decimal("0.0002")


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


def test_a_request_anthropic_cannot_express_is_a_400_before_any_call(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        gateway.client().chat.completions.create(model="claude-chat", messages=MESSAGES, n=2)
    error = caught.value.body
    assert isinstance(error, dict)
    assert (error["code"], error["param"]) == ("invalid_request", "n")
    assert upstream.received == []
