"""Gemini behind the gateway's other APIs: the Responses API and legacy completions through
the chat translation, and criteria routing choosing between an OpenAI-compatible and a
Gemini model."""

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
from tests.support.fake_gemini import FakeGemini, Turn
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import RunningGateway

__all__ = ["fresh_gemini", "gateway", "gemini"]


def test_the_responses_api_works_through_the_chat_translation(
    gateway: RunningGateway, gemini: FakeGemini
) -> None:
    gemini.script("gemini-2.5-flash", Turn(parts=[{"text": "Hi from Responses."}]))
    response = gateway.client().responses.create(model="gemini-chat", input="Say hi.")
    assert response.output_text == "Hi from Responses."
    assert gemini.last().body["contents"] == [{"role": "user", "parts": [{"text": "Say hi."}]}]

    gemini.script(
        "gemini-3-pro-thinking",
        Turn(parts=[{"text": "Greeting time.", "thought": True}, {"text": "Hi."}]),
    )
    reasoned = gateway.client().responses.create(
        model="gemini-think", input="Say hi.", reasoning={"effort": "low", "summary": "auto"}
    )
    assert reasoned.output_text == "Hi."
    (item,) = [o for o in reasoned.output if o.type == "reasoning"]
    assert [s.text for s in item.summary] == ["Greeting time."]
    assert gemini.last().body["generationConfig"]["thinkingConfig"] == {
        "thinkingLevel": "low",
        "includeThoughts": True,
    }


def test_legacy_completions_work_through_the_chat_translation(
    gateway: RunningGateway, gemini: FakeGemini
) -> None:
    gemini.script(
        "gemini-2.5-flash",
        Turn(parts=[{"text": "Hi there."}]),
        Turn(parts=[{"text": "Hi there, streamed."}]),
    )
    client = gateway.client()
    whole = client.completions.create(model="gemini-chat", prompt="Say hi.", max_tokens=20)
    assert whole.object == "text_completion"
    assert whole.choices[0].text == "Hi there."
    assert whole.choices[0].finish_reason == "stop"
    assert whole.usage is not None and whole.usage.prompt_tokens == 10
    assert gemini.last().body == {
        "contents": [{"role": "user", "parts": [{"text": "Say hi."}]}],
        "generationConfig": {"maxOutputTokens": 20},
    }
    chunks = list(
        client.completions.create(
            model="gemini-chat",
            prompt="Say hi.",
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert "".join(c.choices[0].text for c in chunks if c.choices) == "Hi there, streamed."
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 5
    with pytest.raises(openai.BadRequestError) as refused:
        client.completions.create(model="gemini-chat", prompt="x", suffix="y")
    body = refused.value.body
    assert isinstance(body, dict) and body["param"] == "suffix"
    rows = gateway.rows(expect=3)
    assert [r["operation"] for r in rows] == ["completion", "completion", "completion"]
    # flash: 10 prompt tokens at 0.30 and 5 output at 2.50 per 1M
    assert [r["actual_cost"] for r in rows[:2]] == [Decimal("0.0000155")] * 2


def test_criteria_choose_between_an_openai_compatible_and_a_gemini_model(
    gateway: RunningGateway, gemini: FakeGemini, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", content="From the cheap one.")
    gemini.script("gemini-2.5-flash", Turn(parts=[{"text": "{}"}]))
    client = gateway.client()
    cheapest = client.chat.completions.with_raw_response.create(model="cheapest", messages=MESSAGES)
    assert cheapest.headers["x-gateway-provider"] == "fake"  # 0.15 input beats 0.30
    json_mode = client.chat.completions.with_raw_response.create(
        model="vision-routed", messages=MESSAGES, response_format={"type": "json_object"}
    )
    assert json_mode.headers["x-gateway-provider"] == "google"  # only flash has json_mode
    assert json_mode.parse().choices[0].message.content == "{}"
    rows = gateway.rows()
    assert [(r["configuration"], r["adapter_type"]) for r in rows] == [
        ("cheapest", "openai"),
        ("vision-routed", "gemini"),
    ]
