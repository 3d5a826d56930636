"""Gemini's failures behind the OpenAI API: throttling retried by RetryInfo and Retry-
After, a refused request relayed as an OpenAI error, a refused key falling back, safety
blocks as content_filter. The openai SDK → the gateway → a fake Gemini API that checks
each request against the API reference."""

from __future__ import annotations

from decimal import Decimal

import openai
import pytest

from tests.integration.gemini_support import (
    MESSAGES,
    fresh_gemini,
    gateway,
    gemini,
)
from tests.support.fake_gemini import Blocked, Failure, FakeGemini, Turn
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import RunningGateway, gateway_yaml, running_gateway

__all__ = ["fresh_gemini", "gateway", "gemini"]


def test_throttling_is_retried_honouring_retry_info_and_retry_after(
    gateway: RunningGateway, gemini: FakeGemini
) -> None:
    gemini.script(
        "gemini-2.5-flash",
        Failure(429, "RESOURCE_EXHAUSTED", "Quota exceeded", retry_delay="0.05s"),
        Failure(503, "UNAVAILABLE", "The model is overloaded", retry_after="0"),
        Turn(parts=[{"text": "At last."}]),
    )
    answer = gateway.client().chat.completions.create(model="gemini-chat", messages=MESSAGES)
    assert answer.choices[0].message.content == "At last."
    assert len(gemini.received) == 3
    (row,) = gateway.rows()
    assert row["success"] == 1 and row["provider_retries"] == 2

    gemini.script(
        "gemini-2.5-flash",
        *[Failure(429, "RESOURCE_EXHAUSTED", "Quota exceeded", retry_delay="0.01s")] * 3,
    )
    with pytest.raises(openai.RateLimitError) as throttled:
        gateway.client().chat.completions.create(model="gemini-chat", messages=MESSAGES)
    # The final 429 is the gateway's own, with the upstream's RetryInfo as Retry-After.
    assert throttled.value.response.headers.get("retry-after") == "0.01"
    assert len(gemini.received) == 6


def test_a_gemini_refusal_of_the_request_is_relayed_as_openai_error(
    gateway: RunningGateway, gemini: FakeGemini
) -> None:
    gemini.script("gemini-2.5-flash", Failure(400, "INVALID_ARGUMENT", "Bad schema."))
    with pytest.raises(openai.BadRequestError) as refused:
        gateway.client().chat.completions.create(model="gemini-chat", messages=MESSAGES)
    body = refused.value.body
    assert isinstance(body, dict)
    assert (body["code"], body["message"], body["type"]) == (
        "INVALID_ARGUMENT",
        "Bad schema.",
        "invalid_request_error",
    )
    assert len(gemini.received) == 1  # a 400 is not retried


def test_a_refused_api_key_is_the_gateways_credential_failing_and_falls_back(
    gemini: FakeGemini, upstream: FakeUpstream, sqlite_url: str
) -> None:
    gemini.reset()
    upstream.behave("small-model", content="From the fallback.")
    wrong = "AIza-wrong-key-987654321"
    providers = (
        f'  - {{id: google, adapter: gemini, baseUrl: "{gemini.base_url}", apiKey: "{wrong}",\n'
        f"     maxRetries: 0}}\n"
    )
    yaml_text = gateway_yaml(
        upstream.url,
        sqlite_url,
        providers=providers,
        models="  - {id: flash, provider: google, name: gemini-2.5-flash, capabilities: [chat]}",
        configurations="""
  - {id: gemini-only, mode: fixed, model: flash}
  - {id: gemini-first, mode: fixed, model: flash, fallback: [chat]}""",
    )
    with running_gateway(yaml_text) as running:
        client = running.client()
        with pytest.raises(openai.InternalServerError) as failed:
            client.chat.completions.create(model="gemini-only", messages=MESSAGES)
        assert failed.value.status_code == 502
        assert "rejected the gateway's credentials" in str(failed.value.body)
        assert wrong not in str(failed.value.body) and "API key not valid" not in str(
            failed.value.body
        )
        rescued = client.chat.completions.create(model="gemini-first", messages=MESSAGES)
        assert rescued.choices[0].message.content == "From the fallback."
        rows = running.rows()
        assert rows[0]["error_class"] == "upstream_auth"
        assert (rows[1]["success"], rows[1]["served_provider"]) == (1, "fake")


def test_safety_blocks_are_content_filter_with_the_reason(
    gateway: RunningGateway, gemini: FakeGemini
) -> None:
    ratings = [{"category": "HARM_CATEGORY_HARASSMENT", "probability": "HIGH", "blocked": True}]
    gemini.script(
        "gemini-2.5-flash",
        Blocked("SAFETY"),
        Turn(parts=[{"text": "Well,"}], finish="SAFETY", safety_ratings=ratings),
    )
    client = gateway.client()
    blocked = client.chat.completions.create(model="gemini-chat", messages=MESSAGES)
    choice = blocked.choices[0]
    assert choice.finish_reason == "content_filter"
    assert choice.message.content is None
    assert choice.message.refusal is not None and "blockReason: SAFETY" in choice.message.refusal
    chunks = list(
        client.chat.completions.create(model="gemini-chat", messages=MESSAGES, stream=True)
    )
    refusal = "".join(c.choices[0].delta.refusal or "" for c in chunks if c.choices)
    assert refusal == "Gemini stopped the answer (finishReason: SAFETY): HARM_CATEGORY_HARASSMENT"
    assert chunks[-1].choices[0].finish_reason == "content_filter"
    rows = gateway.rows(expect=2)
    assert [r["success"] for r in rows] == [1, 1]
    assert rows[0]["actual_cost"] == Decimal(7) * Decimal("0.30") / 1_000_000
