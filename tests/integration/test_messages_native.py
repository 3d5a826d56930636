"""Anthropic's Messages API in front, native to an Anthropic provider: the anthropic SDK →
the gateway → a fake Messages API. The body goes as it was sent (model replaced), the
client's anthropic-version and anthropic-beta with it; answers and events come back as the
upstream wrote them, priced with cache reads and writes, one row per call."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import anthropic
import httpx
import pytest

from tests.integration.messages_support import EVENTS, MESSAGE, client, gateway, lower, sent
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import OTHER_KEY, TEST_KEY, RunningGateway

__all__ = ["gateway"]

SYSTEM: list[Any] = [
    {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}},
]
HELLO: list[Any] = [{"role": "user", "content": "Say hello."}]


def test_a_whole_message_goes_as_sent_and_comes_back_priced_with_cache_tokens(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave(
        "claude-haiku",
        prompt_tokens=1000,
        cached_tokens=2000,
        cache_write_tokens=100,
        completion_tokens=500,
    )
    raw = client(gateway).messages.with_raw_response.create(
        model="claude-chat",
        max_tokens=300,
        system=SYSTEM,
        messages=HELLO,
        stop_sequences=["END"],
        metadata={"user_id": "u-1"},
        extra_body={"top_k": 5},
        extra_headers={"anthropic-version": "2023-06-01", "anthropic-beta": "some-beta"},
    )
    message = raw.parse()
    MESSAGE.validate_python(message.model_dump())
    assert message.content[0].type == "text"
    assert message.content[0].text == "Hello from the fake upstream."
    assert message.stop_reason == "end_turn"
    assert message.model == "claude-haiku"
    assert message.usage.input_tokens == 1000
    assert message.usage.cache_read_input_tokens == 2000
    assert message.usage.cache_creation_input_tokens == 100
    # 1000·1.00 + 2000·0.10 + 100·1.25 + 500·5.00 = 3825 per 1M
    assert raw.headers["x-gateway-cost-usd"] == "0.003825"
    assert message.usage.model_extra == {"cost": 0.003825}
    assert raw.headers["x-gateway-configuration"] == "claude-chat"
    assert raw.headers["x-gateway-provider"] == "claude"
    assert raw.headers["x-gateway-model"] == "haiku"
    assert raw.headers["x-request-id"]

    upstream_call = sent(upstream)
    assert upstream_call.body == {
        "model": "claude-haiku",
        "max_tokens": 300,
        "system": SYSTEM,
        "messages": HELLO,
        "stop_sequences": ["END"],
        "metadata": {"user_id": "u-1"},
        "top_k": 5,
    }
    headers = lower(upstream_call.headers)
    assert headers["x-api-key"] == "sk-ant-test"
    assert headers["anthropic-version"] == "2023-06-01"
    assert headers["anthropic-beta"] == "some-beta"
    assert "authorization" not in headers
    assert TEST_KEY not in str(upstream_call.headers)

    (row,) = gateway.rows()
    assert row["inbound_api"] == "messages"
    assert row["operation"] == "chat"
    assert (row["provider"], row["model"], row["adapter_type"]) == ("claude", "haiku", "anthropic")
    assert row["success"] == 1 and row["http_status"] == 200
    assert (row["actual_input_tokens"], row["actual_output_tokens"]) == (3100, 500)
    assert row["actual_cost"] == Decimal("0.003825")
    assert row["usage_source"] == "provider"


def test_a_stream_is_relayed_event_by_event_and_priced_from_its_usage_events(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("claude-haiku", prompt_tokens=40, cached_tokens=1000, completion_tokens=9)
    events = []
    with client(gateway).messages.stream(
        model="claude-chat", max_tokens=100, messages=HELLO
    ) as stream:
        for event in stream:
            events.append(event)
        final = stream.get_final_message()
    kinds = [e.type for e in events]
    assert kinds[0] == "message_start"
    assert "content_block_delta" in kinds and kinds[-1] == "message_stop"
    assert "".join(e.delta.text for e in events if e.type == "content_block_delta") == (
        "Hello from the fake upstream."
    )
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens == 9
    assert sent(upstream).body["stream"] is True

    (row,) = gateway.rows(expect=1)
    assert row["inbound_api"] == "messages" and row["operation"] == "stream"
    assert (row["actual_input_tokens"], row["actual_output_tokens"]) == (1040, 9)
    # 40·1.00 + 1000·0.10 + 9·5.00 = 185 per 1M
    assert row["actual_cost"] == Decimal("0.000185")
    assert row["time_to_first_token_ms"] is not None


def test_every_streamed_event_validates_against_the_sdks_types_and_carries_the_cost(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("claude-haiku", prompt_tokens=40, completion_tokens=9, thinking="Hmm.")
    with httpx.stream(
        "POST",
        f"{gateway.url}/v1/messages",
        headers={"x-api-key": TEST_KEY, "anthropic-version": "2023-06-01"},
        json={"model": "claude-chat", "max_tokens": 100, "messages": HELLO, "stream": True},
    ) as answer:
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/event-stream")
        assert answer.headers["x-gateway-provider"] == "claude"
        body = answer.read().decode()
    names, datas = [], []
    for block in body.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.split("\n"))
        names.append(lines["event"])
        datas.append(lines["data"])
    assert "ping" in names  # not among the SDK's event types: it reads and skips it
    parsed = [EVENTS.validate_json(d) for n, d in zip(names, datas, strict=True) if n != "ping"]
    assert [p.type for p in parsed] == [n for n in names if n != "ping"]
    delta = next(p for p in parsed if p.type == "message_delta")
    # 40·1.00 + 9·5.00 = 85 per 1M
    assert delta.usage.model_extra == {"cost": 0.000085}
    assert [p.delta.type for p in parsed if p.type == "content_block_delta"][:2] == [
        "thinking_delta",
        "signature_delta",
    ]


def test_a_thinking_block_and_its_signature_go_back_upstream_untouched(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("claude-haiku", thinking="Let me think.")
    sdk = client(gateway)
    thinking = {"type": "enabled", "budget_tokens": 1024}
    first = sdk.messages.create(
        model="claude-chat", max_tokens=2000, thinking=thinking, messages=HELLO
    )
    block = first.content[0]
    assert block.type == "thinking" and block.signature == "sig-Let me think."
    history = [
        *HELLO,
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {"role": "user", "content": "And again."},
    ]
    sdk.messages.create(model="claude-chat", max_tokens=2000, thinking=thinking, messages=history)
    body = sent(upstream).body
    assert body["thinking"] == thinking
    assert body["messages"][1]["content"][0] == {
        "type": "thinking",
        "thinking": "Let me think.",
        "signature": "sig-Let me think.",
    }


def test_a_beta_field_works_with_its_header_through_the_beta_route(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    sdk = client(gateway)
    management = {"edits": [{"type": "clear_tool_uses_20250919"}]}
    answer = sdk.beta.messages.create(
        model="claude-chat",
        max_tokens=50,
        messages=HELLO,
        betas=["context-management-2025-06-27"],
        extra_body={"context_management": management},
    )
    assert answer.content[0].type == "text"
    upstream_call = sent(upstream)
    assert lower(upstream_call.headers)["anthropic-beta"] == "context-management-2025-06-27"
    assert upstream_call.body["context_management"] == management
    # Without the header, Anthropic refuses the field: the client reads its 400.
    with pytest.raises(anthropic.BadRequestError, match="context_management"):
        sdk.messages.create(
            model="claude-chat",
            max_tokens=50,
            messages=HELLO,
            extra_body={"context_management": management},
        )


def test_bearer_and_x_api_key_both_authenticate_and_a_wrong_key_is_an_authentication_error(
    gateway: RunningGateway,
) -> None:
    by_token = anthropic.Anthropic(base_url=gateway.url, auth_token=TEST_KEY, max_retries=0)
    assert by_token.messages.create(model="claude-chat", max_tokens=10, messages=HELLO).content
    with pytest.raises(anthropic.AuthenticationError) as refused:
        client(gateway, key="sk-wrong").messages.create(
            model="claude-chat", max_tokens=10, messages=HELLO
        )
    assert refused.value.status_code == 401
    assert refused.value.body == {
        "type": "error",
        "error": {"type": "authentication_error", "message": "Missing or invalid API key."},
        "request_id": refused.value.response.headers["x-request-id"],
    }


def test_errors_are_the_sdks_own_exception_classes(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    sdk = client(gateway)
    with pytest.raises(anthropic.NotFoundError) as unknown:
        sdk.messages.create(model="no-such", max_tokens=10, messages=HELLO)
    assert unknown.value.body["error"]["type"] == "not_found_error"  # type: ignore[index]
    with pytest.raises(anthropic.PermissionDeniedError):
        client(gateway, key=OTHER_KEY).messages.create(
            model="claude-chat", max_tokens=10, messages=HELLO
        )
    with pytest.raises(anthropic.BadRequestError, match="messages"):
        sdk.messages.create(model="claude-chat", max_tokens=10, messages=[])
    upstream.behave("claude-haiku", fail_always=429, retry_after="7")
    with pytest.raises(anthropic.RateLimitError) as limited:
        sdk.messages.create(model="claude-chat", max_tokens=10, messages=HELLO)
    assert limited.value.response.headers["retry-after"] == "7"
    upstream.behave("claude-haiku", fail_always=400)
    with pytest.raises(anthropic.BadRequestError, match="fake failure 400"):
        sdk.messages.create(model="claude-chat", max_tokens=10, messages=HELLO)
    upstream.behave("claude-haiku", fail_always=529)
    with pytest.raises(anthropic.InternalServerError) as failed:
        sdk.messages.create(model="claude-chat", max_tokens=10, messages=HELLO)
    assert failed.value.body["type"] == "error"  # type: ignore[index]
    rows = gateway.rows()
    assert {r["inbound_api"] for r in rows} == {"messages"}


def test_a_mid_stream_error_is_an_error_event_the_sdk_raises(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("claude-haiku", stream_error_after=2)
    sdk = client(gateway)
    with (
        pytest.raises(anthropic.APIStatusError, match="Overloaded"),
        sdk.messages.stream(model="claude-chat", max_tokens=10, messages=HELLO) as stream,
    ):
        for _ in stream:
            pass
    (row,) = gateway.rows(expect=1)
    assert row["success"] == 0 and row["error_class"] == "upstream_5xx"


def test_a_stream_that_opens_with_an_error_event_is_retried_before_a_byte_is_sent(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("claude-haiku", stream_error_after=0)
    sdk = client(gateway)
    with (
        pytest.raises(anthropic.InternalServerError, match="Every attempt failed"),
        sdk.messages.stream(model="claude-chat", max_tokens=10, messages=HELLO),
    ):
        pass
    assert upstream.calls["claude-haiku"] == 2  # maxRetries: 1
    (row,) = gateway.rows(expect=1)
    assert row["error_class"] == "upstream_5xx" and row["provider_retries"] == 1


def test_criteria_mode_routes_messages_as_chat_calls(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    answer = client(gateway).messages.create(model="routed", max_tokens=10, messages=HELLO)
    assert answer.content[0].type == "text"
    (row,) = gateway.rows()
    assert row["served_model"] == "haiku" and row["routing_policy_mode"] == "economy"
    assert row["operation"] == "chat" and row["inbound_api"] == "messages"


def test_a_rate_limit_is_a_rate_limit_error(gateway: RunningGateway) -> None:
    sdk = client(gateway)
    sdk.messages.create(model="claude-limited", max_tokens=10, messages=HELLO)
    with pytest.raises(anthropic.RateLimitError) as limited:
        sdk.messages.create(model="claude-limited", max_tokens=10, messages=HELLO)
    assert limited.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
    assert limited.value.response.headers.get("retry-after")


def test_a_cached_answer_is_the_same_message_at_no_cost(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    sdk = client(gateway)
    first = sdk.messages.create(model="claude-cached", max_tokens=10, messages=HELLO)
    raw = sdk.messages.with_raw_response.create(
        model="claude-cached", max_tokens=10, messages=HELLO
    )
    again = raw.parse()
    assert raw.headers["x-gateway-cache"] == "hit" and raw.headers["x-gateway-cost-usd"] == "0"
    assert again.content == first.content and again.usage.model_extra == {"cost": 0}
    assert upstream.calls["claude-haiku"] == 1
    assert [r["cache_hit"] for r in gateway.rows()] == [0, 1]


def test_a_budget_refusal_is_a_rate_limit_error_naming_the_budget(gateway: RunningGateway) -> None:
    sdk = client(gateway)
    sdk.messages.create(model="claude-budgeted", max_tokens=10, messages=HELLO)
    with pytest.raises(anthropic.RateLimitError, match="budget") as refused:
        sdk.messages.create(model="claude-budgeted", max_tokens=10, messages=HELLO)
    assert refused.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
    rows = gateway.rows()
    assert rows[-1]["error_class"] == "budget_exceeded" and rows[-1]["inbound_api"] == "messages"
