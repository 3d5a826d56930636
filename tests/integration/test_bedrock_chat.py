"""AWS Bedrock behind the OpenAI API: the openai SDK → the gateway → a fake Bedrock
Runtime that verifies each request's SigV4 signature and checks its body against the
service model. Chat whole and streamed, tools, structured output, images, reasoning; each
call's row priced exactly. Failures are in test_bedrock_errors.py, the API key mode and the
other APIs in test_bedrock_apis.py."""

from __future__ import annotations

import base64
import json
from decimal import Decimal

import openai
import pytest
from pydantic import BaseModel

from tests.integration.bedrock_support import (
    CLAUDE,
    MESSAGES,
    TOOLS,
    _fresh,
    aws_environment,
    bedrock,
    gateway,
    new_rows,
)
from tests.support.fake_bedrock import Answer, FakeBedrock
from tests.support.gateway import RunningGateway

__all__ = ["_fresh", "aws_environment", "bedrock", "gateway"]

PIXEL = (  # a 1×1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def test_whole_chat_is_signed_translated_and_priced_with_cache_tokens(
    gateway: RunningGateway, bedrock: FakeBedrock
) -> None:
    bedrock.script(
        CLAUDE, Answer(input_tokens=1000, cache_read=2000, cache_write=100, output_tokens=500)
    )
    before = len(gateway.rows())
    history = [
        *MESSAGES,
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Again, louder."},
    ]
    raw = gateway.client().chat.completions.with_raw_response.create(
        model="claude-chat", messages=history, temperature=0.2, top_p=0.9, stop=["END"]
    )
    answer = raw.parse()
    assert answer.choices[0].message.content == "Hello from Bedrock."
    assert answer.choices[0].finish_reason == "stop"
    assert answer.model == CLAUDE
    usage = answer.usage
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens) == (3100, 500)
    assert usage.prompt_tokens_details is not None
    assert usage.prompt_tokens_details.cached_tokens == 2000
    # 1000·0.80 + 2000·0.08 + 100·1.00 + 500·4.00 = 3060 per 1M
    assert raw.headers["x-gateway-cost-usd"] == "0.00306"

    assert bedrock.refused == []  # the signature and the body passed AWS's checks
    (sent,) = bedrock.sent("converse")
    assert sent.raw_path == f"/model/{CLAUDE}/converse"
    assert sent.body == {
        "messages": [
            {"role": "user", "content": [{"text": "Say hello."}]},
            {"role": "assistant", "content": [{"text": "Hello."}]},
            {"role": "user", "content": [{"text": "Again, louder."}]},
        ],
        "system": [{"text": "Be brief."}],
        "inferenceConfig": {
            "maxTokens": 2048,  # the model's maxOutputTokens
            "temperature": 0.2,
            "topP": 0.9,
            "stopSequences": ["END"],
        },
    }
    assert sent.headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKID")

    (row,) = new_rows(gateway, before)
    assert (row["provider"], row["model"], row["adapter_type"]) == ("aws", "claude", "bedrock")
    assert row["success"] == 1 and row["http_status"] == 200
    assert (row["actual_input_tokens"], row["actual_output_tokens"]) == (3100, 500)
    assert row["actual_cost"] == Decimal("0.00306")
    assert row["usage_source"] == "provider"


def test_a_stream_relays_text_and_usage_from_event_stream_frames(
    gateway: RunningGateway, bedrock: FakeBedrock
) -> None:
    bedrock.script(
        CLAUDE,
        Answer(
            text="One two three four.",
            input_tokens=100,
            cache_read=50,
            cache_write=10,
            output_tokens=40,
        ),
    )
    before = len(gateway.rows())
    stream = gateway.client().chat.completions.create(
        model="claude-chat",
        messages=MESSAGES,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "One two three four."
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "stop"
    usage = chunks[-1].usage
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens) == (160, 40)
    assert bedrock.refused == []
    (sent,) = bedrock.sent("converse-stream")
    assert sent.headers["Accept"] == "application/vnd.amazon.eventstream"

    (row,) = new_rows(gateway, before)
    assert row["success"] == 1 and row["usage_source"] == "provider"
    assert (row["actual_input_tokens"], row["actual_output_tokens"]) == (160, 40)
    # 100·0.80 + 50·0.08 (cacheRead) + 10·1.00 (cacheWrite) + 40·4.00 = 254 per 1M
    assert row["actual_cost"] == Decimal("0.000254")


def test_parallel_tool_calls_round_trip_whole_and_streamed(
    gateway: RunningGateway, bedrock: FakeBedrock
) -> None:
    calls = [
        {"toolUseId": "tooluse_a", "name": "lookup", "input": {"q": "cat"}},
        {"toolUseId": "tooluse_b", "name": "lookup", "input": {"q": "dog"}},
    ]
    bedrock.script(CLAUDE, Answer(text="", tool_uses=calls), Answer(text="Both found."))
    client = gateway.client()
    first = client.chat.completions.create(
        model="claude-chat", messages=MESSAGES, tools=TOOLS, tool_choice="auto"
    )
    message = first.choices[0].message
    assert first.choices[0].finish_reason == "tool_calls"
    assert message.tool_calls is not None
    got = [(c.id, c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls]
    assert got == [("tooluse_a", "lookup", {"q": "cat"}), ("tooluse_b", "lookup", {"q": "dog"})]

    follow_up = [
        *MESSAGES,
        message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": "tooluse_a", "content": "a small feline"},
        {"role": "tool", "tool_call_id": "tooluse_b", "content": "a loyal canine"},
    ]
    second = client.chat.completions.create(model="claude-chat", messages=follow_up, tools=TOOLS)
    assert second.choices[0].message.content == "Both found."
    assert bedrock.refused == []
    first_sent, second_sent = bedrock.sent("converse")
    assert first_sent.body["toolConfig"] == {
        "tools": [
            {
                "toolSpec": {
                    "name": "lookup",
                    "description": "Look a word up.",
                    "inputSchema": {
                        "json": {"type": "object", "properties": {"q": {"type": "string"}}}
                    },
                }
            }
        ],
        "toolChoice": {"auto": {}},
    }
    assert second_sent.body["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"toolUse": {"toolUseId": "tooluse_a", "name": "lookup", "input": {"q": "cat"}}},
                {"toolUse": {"toolUseId": "tooluse_b", "name": "lookup", "input": {"q": "dog"}}},
            ],
        },
        {
            "role": "user",  # both results in one user turn, as Converse requires
            "content": [
                {"toolResult": {"toolUseId": "tooluse_a", "content": [{"text": "a small feline"}]}},
                {"toolResult": {"toolUseId": "tooluse_b", "content": [{"text": "a loyal canine"}]}},
            ],
        },
    ]

    bedrock.script(CLAUDE, Answer(text="Let me look.", tool_uses=calls))
    stream = client.chat.completions.create(
        model="claude-chat", messages=MESSAGES, tools=TOOLS, tool_choice="required", stream=True
    )
    arguments: dict[int, str] = {}
    ids: dict[int, str] = {}
    finish = None
    text = ""
    for chunk in stream:
        delta = chunk.choices[0].delta
        text += delta.content or ""
        finish = chunk.choices[0].finish_reason or finish
        for call in delta.tool_calls or []:
            if call.id:
                ids[call.index] = call.id
            arguments[call.index] = arguments.get(call.index, "") + (call.function.arguments or "")  # type: ignore[union-attr]
    assert text == "Let me look."
    assert ids == {0: "tooluse_a", 1: "tooluse_b"}
    assert {i: json.loads(a) for i, a in arguments.items()} == {0: {"q": "cat"}, 1: {"q": "dog"}}
    assert finish == "tool_calls"
    assert bedrock.sent("converse-stream")[-1].body["toolConfig"]["toolChoice"] == {"any": {}}


class Capital(BaseModel):
    city: str
    population: int


def test_structured_output_is_a_forced_tool_whose_input_is_the_content(
    gateway: RunningGateway, bedrock: FakeBedrock
) -> None:
    answer_input = {"city": "Paris", "population": 2100000}
    bedrock.script(
        CLAUDE, Answer(text="Here it is.", tool_uses=[{"name": "Capital", "input": answer_input}])
    )
    parsed = gateway.client().chat.completions.parse(
        model="claude-chat", messages=MESSAGES, response_format=Capital
    )
    choice = parsed.choices[0]
    assert choice.message.parsed == Capital(city="Paris", population=2100000)
    assert json.loads(choice.message.content or "") == answer_input  # the JSON alone
    assert choice.finish_reason == "stop"
    (sent,) = bedrock.sent("converse")
    config = sent.body["toolConfig"]
    assert config["toolChoice"] == {"tool": {"name": "Capital"}}
    assert config["tools"][0]["toolSpec"]["inputSchema"]["json"]["required"] == [
        "city",
        "population",
    ]

    bedrock.script(CLAUDE, Answer(tool_uses=[{"name": "json_object", "input": answer_input}]))
    stream = gateway.client().chat.completions.create(
        model="claude-chat",
        messages=MESSAGES,
        stream=True,
        response_format={"type": "json_object"},
    )
    content = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert json.loads(content) == answer_input
    assert bedrock.refused == []


def test_an_image_data_url_is_sent_as_bytes_and_a_link_is_refused(
    gateway: RunningGateway, bedrock: FakeBedrock
) -> None:
    parts = [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PIXEL}"}},
    ]
    gateway.client().chat.completions.create(
        model="claude-chat", messages=[{"role": "user", "content": parts}]
    )
    (sent,) = bedrock.sent("converse")
    image = sent.body["messages"][0]["content"][1]
    assert image == {"image": {"format": "png", "source": {"bytes": PIXEL}}}
    assert base64.b64decode(image["image"]["source"]["bytes"])[:4] == b"\x89PNG"
    assert bedrock.refused == []

    link = [{"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]
    with pytest.raises(openai.BadRequestError) as refused:
        gateway.client().chat.completions.create(
            model="claude-chat", messages=[{"role": "user", "content": link}]
        )
    error = refused.value.body
    assert isinstance(error, dict)
    assert error["param"] == "messages[0].content[0].image_url"
    assert "base64 data URL" in error["message"]
    assert len(bedrock.sent("converse")) == 1  # nothing sent


def test_reasoning_effort_is_claudes_thinking_and_untranslatable_fields_are_refused(
    gateway: RunningGateway, bedrock: FakeBedrock
) -> None:
    bedrock.script(CLAUDE, Answer(reasoning="Think: hello.", text="Hello."))
    answer = gateway.client().chat.completions.create(
        model="claude-chat", messages=MESSAGES, reasoning_effort="low", max_tokens=4000
    )
    message = answer.choices[0].message
    assert message.content == "Hello."  # the thinking is not the answer
    assert message.model_extra is not None
    assert message.model_extra["thinking_blocks"] == [
        {"type": "thinking", "thinking": "Think: hello.", "signature": "sig-1"}
    ]
    (sent,) = bedrock.sent("converse")
    assert sent.body["additionalModelRequestFields"] == {
        "thinking": {"type": "enabled", "budget_tokens": 2000}
    }
    assert sent.body["inferenceConfig"] == {"maxTokens": 4000}
    bedrock.script(CLAUDE, Answer(reasoning="Think.", text="Hello."))
    raw = gateway.client().chat.completions.with_raw_response.create(
        model="claude-chat", messages=MESSAGES, reasoning_effort="low", temperature=0.2
    )
    assert raw.headers["x-gateway-ignored-params"] == "temperature"  # Claude refuses it beside
    assert "temperature" not in bedrock.sent("converse")[-1].body["inferenceConfig"]
    for field, value in (("logprobs", True), ("presence_penalty", 0.5), ("n", 2)):
        with pytest.raises(openai.BadRequestError) as refused:
            gateway.client().chat.completions.create(
                model="claude-chat", messages=MESSAGES, **{field: value}
            )
        body = refused.value.body
        assert isinstance(body, dict) and body["param"] == field
    with pytest.raises(openai.BadRequestError) as refused:  # Nova has no Claude thinking
        gateway.client().chat.completions.create(
            model="nova-chat", messages=MESSAGES, reasoning_effort="high"
        )
    assert isinstance(refused.value.body, dict)
    assert refused.value.body["param"] == "reasoning_effort"
    assert len(bedrock.received) == 2


def test_thinking_with_a_tool_loop_sends_the_signed_thinking_back(
    gateway: RunningGateway, bedrock: FakeBedrock
) -> None:
    call = {"toolUseId": "tooluse_t", "name": "lookup", "input": {"q": "owl"}}
    bedrock.script(
        CLAUDE,
        Answer(reasoning="I should look.", text="", tool_uses=[call]),
        Answer(text="An owl is a bird."),
    )
    client = gateway.client()
    stream = client.chat.completions.create(
        model="claude-chat", messages=MESSAGES, tools=TOOLS, reasoning_effort="low", stream=True
    )
    chunks = [c for c in stream if c.choices]
    extras = [c.choices[0].delta.model_extra or {} for c in chunks]
    assert "".join(e.get("reasoning_content", "") for e in extras) == "I should look."
    (thought,) = [b for e in extras for b in e.get("thinking_blocks", [])]
    assert thought == {"type": "thinking", "thinking": "I should look.", "signature": "sig-1"}
    # The client keeps the message as it came (whole here), thinking blocks and all.
    bedrock.script(
        CLAUDE,
        Answer(reasoning="I should look.", text="", tool_uses=[call]),
        Answer(text="An owl is a bird."),
    )
    first = client.chat.completions.create(
        model="claude-chat", messages=MESSAGES, tools=TOOLS, reasoning_effort="low"
    )
    follow_up = [
        *MESSAGES,
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": "tooluse_t", "content": "a night bird"},
    ]
    second = client.chat.completions.create(
        model="claude-chat", messages=follow_up, tools=TOOLS, reasoning_effort="low"
    )
    assert second.choices[0].message.content == "An owl is a bird."
    assert bedrock.refused == []
    sent = bedrock.sent("converse")[-1]
    assert sent.body["additionalModelRequestFields"]["thinking"]["type"] == "enabled"
    assert sent.body["messages"][1]["content"][0] == {
        "reasoningContent": {"reasoningText": {"text": "I should look.", "signature": "sig-1"}}
    }
