"""Gemini behind the OpenAI API: the openai SDK → the gateway → a fake Gemini API that checks
each request against the API reference. Chat and streams priced with cached and reasoning
tokens, tool loops (parallel calls, signatures round-tripped), structured output, images,
embeddings, throttling retried, safety blocks, and criteria routing across adapters."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import openai
import pytest
from pydantic import BaseModel

from tests.integration.gemini_support import (
    MESSAGES,
    TOOLS,
    fresh_gemini,
    gateway,
    gemini,
)
from tests.support.fake_gemini import API_KEY, Blocked, Failure, FakeGemini, Turn
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import TEST_KEY, RunningGateway, gateway_yaml, running_gateway

__all__ = ["fresh_gemini", "gateway", "gemini"]

PIXEL = (  # a 1×1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
USAGE = {
    "promptTokenCount": 1000,
    "cachedContentTokenCount": 400,
    "candidatesTokenCount": 200,
    "thoughtsTokenCount": 100,
}
# flash: 600 uncached·0.30 + 400 cached·0.075 + (200 + 100 thoughts)·2.50 = 960 per 1M
USAGE_COST = Decimal("0.00096")


def _call(name: str, **args: Any) -> dict[str, Any]:
    return {"functionCall": {"name": name, "args": args}}


def test_whole_chat_is_translated_priced_with_cached_and_reasoning_tokens(
    gateway: RunningGateway, gemini: FakeGemini
) -> None:
    gemini.script("gemini-2.5-flash", Turn(parts=[{"text": "Hello there."}], usage=USAGE))
    messages = [
        *MESSAGES,
        {"role": "assistant", "content": "Hi."},
        {"role": "user", "content": "Once more."},
    ]
    raw = gateway.client().chat.completions.with_raw_response.create(
        model="gemini-chat",
        messages=messages,
        temperature=0.2,
        top_p=0.9,
        stop=["END"],
        seed=3,
        max_completion_tokens=300,
        verbosity="low",
    )
    answer = raw.parse()
    assert raw.headers["x-gateway-ignored-params"] == "verbosity"
    assert answer.choices[0].message.content == "Hello there."
    assert answer.choices[0].finish_reason == "stop"
    assert answer.model == "gemini-2.5-flash-001"
    usage = answer.usage
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (1000, 300, 1300)
    assert usage.prompt_tokens_details is not None
    assert usage.prompt_tokens_details.cached_tokens == 400
    assert usage.completion_tokens_details is not None
    assert usage.completion_tokens_details.reasoning_tokens == 100
    assert Decimal(raw.headers["x-gateway-cost-usd"]) == USAGE_COST

    sent = gemini.last("generateContent")
    assert sent.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert sent.body == {
        "contents": [
            {"role": "user", "parts": [{"text": "Say hello."}]},
            {"role": "model", "parts": [{"text": "Hi."}]},
            {"role": "user", "parts": [{"text": "Once more."}]},
        ],
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "generationConfig": {
            "maxOutputTokens": 300,
            "temperature": 0.2,
            "topP": 0.9,
            "seed": 3,
            "stopSequences": ["END"],
        },
    }
    headers = {k.lower(): v for k, v in sent.headers.items()}
    assert headers["x-goog-api-key"] == API_KEY
    assert "authorization" not in headers and TEST_KEY not in str(sent.headers)

    (row,) = gateway.rows()
    assert (row["provider"], row["model"], row["adapter_type"]) == ("google", "flash", "gemini")
    assert row["success"] == 1 and row["http_status"] == 200
    assert (row["actual_input_tokens"], row["actual_output_tokens"]) == (1000, 300)
    assert row["actual_cost"] == USAGE_COST
    assert row["usage_source"] == "provider"
    assert row["response_model"] == "gemini-2.5-flash-001"


def test_a_stream_relays_text_and_the_usage_chunk_and_is_priced(
    gateway: RunningGateway, gemini: FakeGemini
) -> None:
    gemini.script("gemini-2.5-flash", Turn(parts=[{"text": "One two three four."}], usage=USAGE))
    stream = gateway.client().chat.completions.create(
        model="gemini-chat",
        messages=MESSAGES,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "One two three four."
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) == 4
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "stop" and finishes.count("stop") == 1
    usage = chunks[-1].usage
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens) == (1000, 300)
    assert usage.completion_tokens_details is not None
    assert usage.completion_tokens_details.reasoning_tokens == 100
    sent = gemini.last("streamGenerateContent")
    assert sent.query == {"alt": "sse"}
    assert sent.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    (row,) = gateway.rows(expect=1)
    assert row["operation"] == "stream" and row["success"] == 1
    assert row["actual_cost"] == USAGE_COST


def test_a_tool_loop_with_parallel_calls_sends_results_back_by_name(
    gateway: RunningGateway, gemini: FakeGemini
) -> None:
    define = {"type": "function", "function": {"name": "define", "parameters": {}}}
    gemini.script(
        "gemini-2.5-flash",
        Turn(parts=[{"text": "Let me look."}, _call("lookup", q="x"), _call("define")]),
        Turn(parts=[{"text": "x is a letter."}]),
    )
    client = gateway.client()
    first = client.chat.completions.create(
        model="gemini-chat", messages=MESSAGES, tools=[*TOOLS, define], tool_choice="auto"
    )
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls or []
    assert [c.function.name for c in calls] == ["lookup", "define"]
    assert json.loads(calls[0].function.arguments) == {"q": "x"}
    assert len({c.id for c in calls}) == 2
    sent = gemini.last().body
    assert sent["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "lookup",
                    "description": "Look a word up.",
                    "parametersJsonSchema": TOOLS[0]["function"]["parameters"],
                },
                {"name": "define"},
            ]
        }
    ]
    assert sent["toolConfig"] == {"functionCallingConfig": {"mode": "AUTO"}}

    follow_up = [
        *MESSAGES,
        choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": calls[1].id, "content": "defined"},
        {"role": "tool", "tool_call_id": calls[0].id, "content": "x: a letter"},
    ]
    second = client.chat.completions.create(
        model="gemini-chat", messages=follow_up, tools=[*TOOLS, define]
    )
    assert second.choices[0].message.content == "x is a letter."
    assert gemini.last().body["contents"][1:] == [
        {
            "role": "model",
            "parts": [{"text": "Let me look."}, _call("lookup", q="x"), _call("define")],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "define", "response": {"result": "defined"}}},
                {"functionResponse": {"name": "lookup", "response": {"result": "x: a letter"}}},
            ],
        },
    ]
    assert [r["operation"] for r in gateway.rows()] == ["tools", "tools"]


def test_a_streamed_tool_call_arrives_as_deltas_and_parallel_false_keeps_one(
    gateway: RunningGateway, gemini: FakeGemini
) -> None:
    gemini.script(
        "gemini-2.5-flash",
        Turn(parts=[_call("lookup", q="x"), _call("lookup", q="y")]),
        Turn(parts=[_call("lookup", q="x"), _call("lookup", q="y")]),
    )
    client = gateway.client()
    chunks = list(
        client.chat.completions.create(
            model="gemini-chat", messages=MESSAGES, tools=TOOLS, stream=True
        )
    )
    deltas = [d for c in chunks if c.choices for d in c.choices[0].delta.tool_calls or []]
    assert [d.index for d in deltas] == [0, 1]
    assert [json.loads(d.function.arguments or "") for d in deltas if d.function] == [
        {"q": "x"},
        {"q": "y"},
    ]
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    single = client.chat.completions.create(
        model="gemini-chat", messages=MESSAGES, tools=TOOLS, parallel_tool_calls=False
    )
    assert len(single.choices[0].message.tool_calls or []) == 1


class Weather(BaseModel):
    city: str
    celsius: int


def test_structured_output_parses_through_the_sdk(
    gateway: RunningGateway, gemini: FakeGemini
) -> None:
    gemini.script("gemini-2.5-flash", Turn(parts=[{"text": '{"city": "Oslo", "celsius": -3}'}]))
    parsed = gateway.client().chat.completions.parse(
        model="gemini-chat", messages=MESSAGES, response_format=Weather
    )
    assert parsed.choices[0].message.parsed == Weather(city="Oslo", celsius=-3)
    config = gemini.last().body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    schema = config["responseJsonSchema"]
    assert schema["properties"] == {
        "city": {"title": "City", "type": "string"},
        "celsius": {"title": "Celsius", "type": "integer"},
    }
    assert schema["additionalProperties"] is False
    (row,) = gateway.rows()
    assert row["success"] == 1


def test_a_data_url_image_is_sent_inline_and_an_http_url_is_a_400(
    gateway: RunningGateway, gemini: FakeGemini
) -> None:
    gemini.script("gemini-2.5-flash", Turn(parts=[{"text": "A pixel."}]))
    client = gateway.client()
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PIXEL}"}}
    content: list[Any] = [{"type": "text", "text": "What is it?"}, image]
    answer = client.chat.completions.create(
        model="gemini-chat", messages=[{"role": "user", "content": content}]
    )
    assert answer.choices[0].message.content == "A pixel."
    assert gemini.last().body["contents"][0]["parts"][1] == {
        "inlineData": {"mimeType": "image/png", "data": PIXEL}
    }
    sent_before = len(gemini.received)
    remote = {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(
            model="gemini-chat", messages=[{"role": "user", "content": [remote]}]
        )
    error = refused.value.body
    assert isinstance(error, dict)
    assert error["param"] == "messages[0].content[0].image_url.url"
    assert "data URL" in error["message"]
    assert len(gemini.received) == sent_before  # nothing was sent
    rows = gateway.rows()
    assert [r["operation"] for r in rows] == ["vision", "vision"]
    assert rows[1]["http_status"] == 400


def test_embeddings_are_batched_and_decoded_by_the_sdk(
    gateway: RunningGateway, gemini: FakeGemini
) -> None:
    client = gateway.client()
    result = client.embeddings.create(model="gemini-embed", input=["ab", "abcd"], dimensions=2)
    assert [e.embedding for e in result.data] == [[2.0, 1.0], [4.0, 2.0]]
    sent = gemini.last("batchEmbedContents")
    assert sent.path == "/v1beta/models/gemini-embedding-001:batchEmbedContents"
    assert sent.body == {
        "requests": [
            {
                "model": "models/gemini-embedding-001",
                "content": {"parts": [{"text": t}]},
                "outputDimensionality": 2,
            }
            for t in ("ab", "abcd")
        ]
    }
    floats = client.embeddings.create(model="gemini-embed", input="abc", encoding_format="float")
    assert floats.data[0].embedding == [3.0, 1.5, 1.0]
    rows = gateway.rows()
    assert [r["operation"] for r in rows] == ["embedding", "embedding"]
    for row in rows:  # Gemini reports no usage for embeddings: the gateway counts
        assert row["usage_source"] == "estimated"
        tokens = row["estimated_input_tokens"]
        assert tokens > 0
        assert row["estimated_cost"] == Decimal(tokens) * Decimal("0.15") / 1_000_000


def test_thinking_with_a_tool_loop_round_trips_the_signatures(
    gateway: RunningGateway, gemini: FakeGemini
) -> None:
    usage = {"promptTokenCount": 50, "candidatesTokenCount": 10, "thoughtsTokenCount": 40}
    gemini.script(
        "gemini-3-pro-thinking",
        Turn(
            parts=[
                {"text": "I should look x up.", "thought": True},
                _call("lookup", q="x"),
                _call("lookup", q="y"),
            ],
            usage=usage,
        ),
        Turn(parts=[{"text": "Now z.", "thought": True}, _call("lookup", q="z")], usage=usage),
        Turn(parts=[{"text": "Done."}], usage=usage),
    )
    client = gateway.client()
    history: list[Any] = list(MESSAGES)
    first = client.chat.completions.create(
        model="gemini-think", messages=history, tools=TOOLS, reasoning_effort="high"
    )
    assert gemini.last().body["generationConfig"] == {
        "thinkingConfig": {"thinkingLevel": "high", "includeThoughts": True}
    }
    assert first.choices[0].message.model_extra == {"reasoning_content": "I should look x up."}
    assert first.usage is not None and first.usage.completion_tokens == 50
    assert first.usage.completion_tokens_details is not None
    assert first.usage.completion_tokens_details.reasoning_tokens == 40
    calls = first.choices[0].message.tool_calls or []
    assert ".sig." in calls[0].id and ".sig." not in calls[1].id
    history += [
        first.choices[0].message.model_dump(exclude_none=True),
        *({"role": "tool", "tool_call_id": c.id, "content": "r"} for c in calls),
    ]
    # The second step streams: the signature comes in the streamed call's id.
    chunks = list(
        client.chat.completions.create(
            model="gemini-think",
            messages=history,
            tools=TOOLS,
            reasoning_effort="high",
            stream=True,
        )
    )
    (delta,) = [d for c in chunks if c.choices for d in c.choices[0].delta.tool_calls or []]
    thoughts = [(c.choices[0].delta.model_extra or {}).get("reasoning_content") for c in chunks]
    assert "Now z." in thoughts
    assert delta.id is not None and ".sig." in delta.id and delta.function is not None
    history += [
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": delta.id,
                    "type": "function",
                    "function": {
                        "name": delta.function.name,
                        "arguments": delta.function.arguments,
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": delta.id, "content": "r"},
    ]
    last = client.chat.completions.create(
        model="gemini-think", messages=history, tools=TOOLS, reasoning_effort="high"
    )
    assert last.choices[0].message.content == "Done."
    model_turns = [c for c in gemini.last().body["contents"] if c["role"] == "model"]
    signatures = [p.get("thoughtSignature") for c in model_turns for p in c["parts"]]
    assert signatures[0] in gemini.signatures and signatures[1] is None
    assert signatures[2] in gemini.signatures and signatures[0] != signatures[2]

    # A call whose signature is lost (made elsewhere, or its id rewritten) goes with
    # Google's stand-in, which Gemini accepts for histories it did not produce.
    history[2]["tool_calls"][0]["id"] = "call_from_elsewhere"
    history[3]["tool_call_id"] = "call_from_elsewhere"
    gemini.script("gemini-3-pro-thinking", Turn(parts=[{"text": "Still fine."}]))
    again = client.chat.completions.create(model="gemini-think", messages=history, tools=TOOLS)
    assert again.choices[0].message.content == "Still fine."
    model_turns = [c for c in gemini.last().body["contents"] if c["role"] == "model"]
    assert model_turns[0]["parts"][0]["thoughtSignature"] == "skip_thought_signature_validator"
    assert model_turns[1]["parts"][0]["thoughtSignature"] in gemini.signatures
    rows = gateway.rows(expect=4)
    # 2.00 per 1M of 50 prompt tokens + 12.00 per 1M of 50 output (10 + 40 thoughts)
    assert [r["actual_cost"] for r in rows[:3]] == [Decimal("0.0007")] * 3


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
