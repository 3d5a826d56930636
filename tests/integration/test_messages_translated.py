"""Anthropic's Messages API in front of an OpenAI-compatible provider: the anthropic SDK →
the gateway → a fake Chat Completions API. Requests translated to chat, answers and
streams translated back (validated against the SDK's own types), priced by the model
that served, what is left out listed and what cannot be translated refused by name."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import anthropic
import httpx
import pytest

from tests.integration.messages_support import EVENTS, MESSAGE, client, gateway, sent
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import TEST_KEY, RunningGateway

__all__ = ["gateway"]

HELLO: list[Any] = [{"role": "user", "content": "Say hello."}]
LOOKUP: dict[str, Any] = {
    "name": "lookup",
    "description": "Look a word up.",
    "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
}
CHAT_PATH = "/v1/chat/completions"
PIXEL = (  # a 1×1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def test_a_whole_message_is_translated_to_chat_and_back_priced(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", prompt_tokens=1000, completion_tokens=500)
    raw = client(gateway).messages.with_raw_response.create(
        model="chat",
        max_tokens=300,
        system=[{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        messages=HELLO,
        stop_sequences=["END"],
        metadata={"user_id": "u-1"},
        extra_body={"temperature": 0.2},
    )
    message = raw.parse()
    MESSAGE.validate_python(message.model_dump())
    assert message.content[0].type == "text"
    assert message.content[0].text == "Hello from the fake upstream."
    assert message.stop_reason == "end_turn" and message.type == "message"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (1000, 500)
    # 1000·0.15 + 500·0.60 = 450 per 1M
    assert raw.headers["x-gateway-cost-usd"] == "0.00045"
    assert raw.headers["x-gateway-provider"] == "fake"
    assert sent(upstream, CHAT_PATH).body == {
        "model": "small-model",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Say hello."},
        ],
        "max_tokens": 300,
        "stop": ["END"],
        "temperature": 0.2,
    }
    assert "anthropic-version" not in {k.lower() for k in sent(upstream, CHAT_PATH).headers}
    (row,) = gateway.rows()
    assert row["inbound_api"] == "messages" and row["operation"] == "chat"
    assert row["adapter_type"] == "openai" and row["actual_cost"] == Decimal("0.00045")


def test_a_tool_loop_runs_through_the_sdk(gateway: RunningGateway, upstream: FakeUpstream) -> None:
    upstream.behave("small-model", tool_call=True, tool_call_until_result=True, content="x: 42")
    sdk = client(gateway)
    first = sdk.messages.create(
        model="chat",
        max_tokens=100,
        messages=[{"role": "user", "content": "Look x up."}],
        tools=[LOOKUP],
        tool_choice={"type": "auto", "disable_parallel_tool_use": True},
    )
    assert first.stop_reason == "tool_use"
    (use,) = [b for b in first.content if b.type == "tool_use"]
    assert (use.name, use.input) == ("lookup", {"q": "x"})
    chat = sent(upstream, CHAT_PATH).body
    assert chat["tools"][0]["function"]["name"] == "lookup"
    assert chat["tool_choice"] == "auto" and chat["parallel_tool_calls"] is False
    second = sdk.messages.create(
        model="chat",
        max_tokens=100,
        tools=[LOOKUP],
        messages=[
            {"role": "user", "content": "Look x up."},
            {"role": "assistant", "content": [b.model_dump() for b in first.content]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "42"}],
            },
        ],
    )
    assert second.content[0].type == "text" and second.content[0].text == "x: 42"
    assert sent(upstream, CHAT_PATH).body["messages"][-1] == {
        "role": "tool",
        "tool_call_id": use.id,
        "content": "42",
    }
    assert [r["operation"] for r in gateway.rows()] == ["tools", "tools"]


def test_a_stream_is_translated_event_by_event_with_tool_arguments_as_input_json_delta(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", tool_call=True, prompt_tokens=30, completion_tokens=9)
    with client(gateway).messages.stream(
        model="chat", max_tokens=100, messages=HELLO, tools=[LOOKUP]
    ) as stream:
        events = list(stream)
        final = stream.get_final_message()
    assert final.stop_reason == "tool_use"
    assert final.content[0].type == "text" and final.content[0].text == (
        "Hello from the fake upstream."
    )
    assert final.content[1].type == "tool_use" and final.content[1].input == {"q": "x"}
    assert final.usage.output_tokens == 9 and final.usage.input_tokens == 30
    deltas = [e.delta.type for e in events if e.type == "content_block_delta"]
    assert "input_json_delta" in deltas and "text_delta" in deltas
    (row,) = gateway.rows(expect=1)
    assert row["operation"] == "stream" and row["inbound_api"] == "messages"
    assert (row["actual_input_tokens"], row["actual_output_tokens"]) == (30, 9)
    assert row["actual_cost"] == Decimal("0.0000099")  # 30·0.15 + 9·0.60 per 1M


def test_every_translated_event_validates_against_the_sdks_types(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    with httpx.stream(
        "POST",
        f"{gateway.url}/v1/messages",
        headers={"x-api-key": TEST_KEY, "anthropic-version": "2023-06-01"},
        json={"model": "chat", "max_tokens": 50, "messages": HELLO, "stream": True},
    ) as answer:
        assert answer.status_code == 200
        body = answer.read().decode()
    blocks = [
        dict(line.split(": ", 1) for line in b.split("\n")) for b in body.strip().split("\n\n")
    ]
    parsed = [EVENTS.validate_json(b["data"]) for b in blocks]
    assert [p.type for p in parsed] == [b["event"] for b in blocks]
    assert parsed[0].type == "message_start" and parsed[-1].type == "message_stop"
    delta = next(p for p in parsed if p.type == "message_delta")
    assert delta.usage.model_extra == {"cost": 0.0000060}  # 12·0.15 + 7·0.60 per 1M


def test_an_image_goes_as_an_image_url_part(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    image = {"type": "base64", "media_type": "image/png", "data": PIXEL}
    client(gateway).messages.create(
        model="chat",
        max_tokens=50,
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is this?"},
                    {"type": "image", "source": image},
                ],
            }
        ],
    )
    parts = sent(upstream, CHAT_PATH).body["messages"][0]["content"]
    assert parts[1] == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PIXEL}"}}
    (row,) = gateway.rows()
    assert row["operation"] == "vision"


def test_an_offered_server_tool_is_left_out_and_listed_a_required_one_refused(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    search = {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}
    sdk = client(gateway)
    raw = sdk.messages.with_raw_response.create(
        model="chat", max_tokens=50, messages=HELLO, tools=[LOOKUP, search]
    )
    assert raw.headers["x-gateway-ignored-params"] == "tools[web_search_20250305]"
    assert [t["function"]["name"] for t in sent(upstream, CHAT_PATH).body["tools"]] == ["lookup"]
    assert gateway.rows()[-1]["ignored_params"] == "tools[web_search_20250305]"
    calls = len(upstream.received)
    with pytest.raises(anthropic.BadRequestError, match="web_search") as refused:
        sdk.messages.create(
            model="chat",
            max_tokens=50,
            messages=HELLO,
            tools=[search],
            tool_choice={"type": "tool", "name": "web_search"},
        )
    assert refused.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    assert len(upstream.received) == calls  # nothing was sent
    assert gateway.rows()[-1]["error_class"] == "untranslatable"


def test_thinking_is_reasoning_effort_where_the_model_offers_it_else_listed(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    sdk = client(gateway)
    thinking: Any = {"type": "enabled", "budget_tokens": 8000}
    sdk.messages.create(model="reasoner", max_tokens=9000, thinking=thinking, messages=HELLO)
    body = sent(upstream, CHAT_PATH).body
    assert body["reasoning_effort"] == "medium" and body["max_completion_tokens"] == 9000
    raw = sdk.messages.with_raw_response.create(
        model="chat", max_tokens=9000, thinking=thinking, messages=HELLO
    )
    assert raw.headers["x-gateway-ignored-params"] == "thinking"
    assert "reasoning_effort" not in sent(upstream, CHAT_PATH).body


def test_what_cannot_be_translated_is_a_bad_request_naming_it(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    with pytest.raises(anthropic.BadRequestError, match="top_k"):
        client(gateway).messages.create(
            model="chat", max_tokens=10, messages=HELLO, extra_body={"top_k": 3}
        )
    assert upstream.received == []


def test_upstream_errors_are_the_sdks_classes(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", fail_always=429, retry_after="3")
    with pytest.raises(anthropic.RateLimitError):
        client(gateway).messages.create(model="chat", max_tokens=10, messages=HELLO)
    upstream.behave("small-model", fail_always=400)
    with pytest.raises(anthropic.BadRequestError, match="fake failure 400"):
        client(gateway).messages.create(model="chat", max_tokens=10, messages=HELLO)


def test_a_native_call_falls_back_to_a_translated_one(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("claude-haiku", fail_always=500)
    raw = client(gateway).messages.with_raw_response.create(
        model="claude-rescued", max_tokens=10, messages=HELLO
    )
    message = raw.parse()
    assert message.type == "message" and message.content[0].type == "text"
    assert raw.headers["x-gateway-provider"] == "fake"
    (row,) = gateway.rows()
    assert row["fallback_attempts"] == 1 and row["served_model"] == "small"


def test_criteria_mode_routes_to_a_translated_model(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    answer = client(gateway).messages.create(
        model="routed-chat", max_tokens=10, messages=HELLO, tools=[LOOKUP]
    )
    assert answer.type == "message"
    (row,) = gateway.rows()
    assert row["routing_policy_mode"] == "economy" and row["served_model"] == "small"
    assert row["operation"] == "tools" and row["inbound_api"] == "messages"


def test_a_stream_without_usage_is_estimated(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", report_usage=False)
    with client(gateway).messages.stream(model="chat", max_tokens=50, messages=HELLO) as stream:
        assert stream.get_final_message().content[0].type == "text"
    (row,) = gateway.rows(expect=1)
    assert row["usage_source"] == "estimated" and row["success"] == 1
    assert row["estimated_output_tokens"] > 0 and row["actual_output_tokens"] is None


def test_a_translated_stream_cut_midway_ends_with_an_error_event(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", cut_after=2, content="one two three four five")
    with (
        pytest.raises(anthropic.APIStatusError, match="stream"),
        client(gateway).messages.stream(model="chat", max_tokens=50, messages=HELLO) as stream,
    ):
        for _ in stream:
            pass
    (row,) = gateway.rows(expect=1)
    assert row["success"] == 0 and row["error_class"] == "stream_cut"


def test_the_demo_echo_provider_answers_the_messages_api(sqlite_url: str) -> None:
    from tests.support.gateway import running_gateway

    yaml_text = f"""
database: {{url: "{sqlite_url}"}}
auth: {{keys: [{{id: alice, key: "${{ALICE_KEY}}"}}]}}
providers: [{{id: demo, adapter: echo, baseUrl: "echo://local"}}]
models: [{{id: demo-chat, provider: demo, capabilities: [chat, tools, streaming]}}]
configurations: [{{id: demo, mode: fixed, model: demo-chat}}]
"""
    with running_gateway(yaml_text) as running:
        sdk = client(running)
        message = sdk.messages.create(model="demo", max_tokens=50, messages=HELLO)
        assert message.type == "message" and message.content[0].type == "text"
        with sdk.messages.stream(model="demo", max_tokens=50, messages=HELLO) as stream:
            assert "".join(stream.text_stream)
