"""Gemini behind the OpenAI API: the openai SDK → the gateway → a fake Gemini API that checks
each request against the API reference. Chat and streams priced with cached and reasoning
tokens, tool loops (parallel calls, signatures round-tripped), structured output, images and
embeddings. Failures are in test_gemini_errors.py, the other APIs and criteria routing in
test_gemini_apis.py."""

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
from tests.support.fake_gemini import API_KEY, FakeGemini, Turn
from tests.support.gateway import TEST_KEY, RunningGateway

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
