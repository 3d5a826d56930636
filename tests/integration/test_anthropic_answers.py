"""Anthropic behind the OpenAI API, whole answers: the openai SDK → the gateway → a fake
Messages API. Chat priced with cache tokens, a tool call round trip, image parts, and
criteria routing across adapter types."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from tests.integration.anthropic_support import MESSAGES, TOOLS, _sent, gateway
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import TEST_KEY, RunningGateway

__all__ = ["gateway"]


PIXEL = (  # a 1×1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


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
