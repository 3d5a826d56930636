"""Structured outputs and conformance on a Claude-backed configuration, through the real server.

The openai SDK's ``chat.completions.parse`` (and ``.stream``) with a pydantic model →
the gateway → the fake Anthropic Messages API, which answers a forced tool as the real
API does; what comes back is validated against OpenAI's published schema.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from pydantic import BaseModel

from tests.support.fake_upstream import FakeUpstream, Received
from tests.support.gateway import (
    TEST_KEY,
    RunningGateway,
    anthropic_provider,
    gateway_yaml,
    running_gateway,
)
from tests.support.openai_schema import assert_valid
from tests.support.sse import sse_json

MESSAGES: list[Any] = [{"role": "user", "content": "Solve 8x + 7 = -23."}]
LOOKUP = {
    "type": "object",
    "properties": {"q": {"type": "string"}},
    "required": ["q"],
    "additionalProperties": False,
}
TOOLS: list[Any] = [
    {"type": "function", "function": {"name": "lookup", "parameters": LOOKUP, "strict": True}}
]


class Step(BaseModel):
    explanation: str
    output: str


class MathAnswer(BaseModel):
    steps: list[Step]
    final_answer: str


ANSWER = MathAnswer(
    steps=[Step(explanation="Subtract 7", output="8x = -30"), Step(explanation="÷8", output="x")],
    final_answer="x = -3.75",
)


@pytest.fixture
def gateway(upstream: FakeUpstream, sqlite_url: str) -> Iterator[RunningGateway]:
    yaml_text = gateway_yaml(
        upstream.url,
        sqlite_url,
        providers=anthropic_provider(upstream.url, "timeoutSeconds: 5, maxRetries: 0"),
        models="""
  - {id: haiku, provider: claude, name: claude-haiku, capabilities: [chat, tools, streaming],
     maxOutputTokens: 2048, price: {input: 1.00, output: 5.00}}""",
        configurations="  - {id: claude-chat, mode: fixed, model: haiku}",
    )
    with running_gateway(yaml_text) as running:
        yield running


def _sent(upstream: FakeUpstream) -> Received:
    return [r for r in upstream.received if r.path == "/anthropic/v1/messages"][-1]


def _post(gateway: RunningGateway, body: dict[str, Any]) -> httpx.Response:
    headers = {"authorization": f"Bearer {TEST_KEY}"}
    return httpx.post(f"{gateway.url}/v1/chat/completions", json=body, headers=headers, timeout=20)


def test_parse_with_a_pydantic_model_answers_the_parsed_object(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("claude-haiku", forced_input=ANSWER.model_dump())
    client = gateway.client()
    for parse in (client.chat.completions.parse, client.beta.chat.completions.parse):
        completion = parse(model="claude-chat", messages=MESSAGES, response_format=MathAnswer)
        message = completion.choices[0].message
        assert message.parsed == ANSWER
        assert message.tool_calls in (None, [])
        assert completion.choices[0].finish_reason == "stop"

    sent = _sent(upstream).body
    (tool,) = sent["tools"]
    assert tool["name"] == "MathAnswer"
    assert tool["input_schema"] == MathAnswer.model_json_schema() | {
        "additionalProperties": False,
        "$defs": {"Step": Step.model_json_schema() | {"additionalProperties": False}},
    }
    assert sent["tool_choice"] == {
        "type": "tool",
        "name": "MathAnswer",
        "disable_parallel_tool_use": True,
    }
    rows = gateway.rows()
    assert [r["success"] for r in rows] == [1, 1] and rows[0]["operation"] == "chat"


def test_a_streamed_parse_assembles_the_parsed_object(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("claude-haiku", forced_input=ANSWER.model_dump())
    with gateway.client().chat.completions.stream(
        model="claude-chat", messages=MESSAGES, response_format=MathAnswer
    ) as stream:
        deltas = [e.delta for e in stream if e.type == "content.delta"]
        final = stream.get_final_completion()
    assert len(deltas) > 1  # the tool input arrived piece by piece, as content
    assert final.choices[0].message.parsed == ANSWER
    assert final.choices[0].finish_reason == "stop"
    assert _sent(upstream).body["stream"] is True


def test_the_translated_answer_and_chunks_of_a_json_answer_conform(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("claude-haiku", forced_input={"a": 1})
    body = {
        "model": "claude-chat",
        "messages": MESSAGES,
        "response_format": {"type": "json_object"},
    }
    whole = _post(gateway, body)
    assert_valid(whole.json(), "CreateChatCompletionResponse")
    assert json.loads(whole.json()["choices"][0]["message"]["content"]) == {"a": 1}
    chunks = sse_json(
        gateway.url, "chat/completions", {**body, "stream_options": {"include_usage": True}}
    )
    for chunk in chunks:
        assert_valid(chunk, "CreateChatCompletionStreamResponse")
    content = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert json.loads(content) == {"a": 1}


def test_plain_and_tool_answers_through_the_server_conform(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("claude-haiku", tool_call=True, content="Let me look.")
    body = {"model": "claude-chat", "messages": MESSAGES, "tools": TOOLS}
    assert_valid(_post(gateway, body).json(), "CreateChatCompletionResponse")
    for chunk in sse_json(
        gateway.url, "chat/completions", {**body, "stream_options": {"include_usage": True}}
    ):
        assert_valid(chunk, "CreateChatCompletionStreamResponse")


def test_beside_the_clients_tools_the_answer_is_a_tool_call_or_the_parsed_object(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    client = gateway.client()
    upstream.behave("claude-haiku", forced_input=ANSWER.model_dump())
    answered = client.chat.completions.parse(
        model="claude-chat", messages=MESSAGES, tools=TOOLS, response_format=MathAnswer
    )
    assert answered.choices[0].message.parsed == ANSWER
    assert answered.choices[0].finish_reason == "stop"
    sent = _sent(upstream).body
    assert [t["name"] for t in sent["tools"]] == ["lookup", "MathAnswer"]
    assert sent["tool_choice"] == {"type": "any"}

    upstream.behave("claude-haiku", tool_call=True, content="")
    called = client.chat.completions.parse(
        model="claude-chat", messages=MESSAGES, tools=TOOLS, response_format=MathAnswer
    )
    (call,) = called.choices[0].message.tool_calls or []
    assert call.function.name == "lookup" and call.function.parsed_arguments == {"q": "x"}
    assert called.choices[0].finish_reason == "tool_calls"
    assert called.choices[0].message.parsed is None


def test_a_preamble_before_the_answer_tool_never_reaches_the_content(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    """The model writes "Let me check." before calling the answer tool: the content is the
    tool's JSON alone, whole and streamed, so parse() reads it."""
    upstream.behave(
        "claude-haiku", forced_input=ANSWER.model_dump(), forced_preamble="Let me check."
    )
    client = gateway.client()
    completion = client.chat.completions.parse(
        model="claude-chat", messages=MESSAGES, response_format=MathAnswer
    )
    message = completion.choices[0].message
    assert message.parsed == ANSWER
    assert message.content is not None and json.loads(message.content) == ANSWER.model_dump()
    assert completion.choices[0].finish_reason == "stop"

    with client.chat.completions.stream(
        model="claude-chat", messages=MESSAGES, response_format=MathAnswer
    ) as stream:
        deltas = [e.delta for e in stream if e.type == "content.delta"]
        final = stream.get_final_completion()
    assert "Let me" not in "".join(deltas)
    assert final.choices[0].message.parsed == ANSWER
    assert final.choices[0].finish_reason == "stop"
    assert _sent(upstream).body["stream"] is True
    assert upstream.calls["claude-haiku"] == 2


def test_json_output_with_extended_thinking_answers_json_without_thinking_listed(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    """Thinking cannot force the answer tool: it is left out (listed as ignored), so the
    answer is still the JSON asked for."""
    client = gateway.client()
    for stream in (False, True):
        raw = client.chat.completions.with_raw_response.create(
            model="claude-chat",
            messages=MESSAGES,
            response_format={"type": "json_object"},
            reasoning_effort="high",
            stream=stream,
        )
        assert raw.headers["x-gateway-ignored-params"] == "reasoning_effort"
        if stream:
            text = "".join(
                chunk.choices[0].delta.content or "" for chunk in raw.parse() if chunk.choices
            )
        else:
            text = raw.parse().choices[0].message.content or ""
        assert json.loads(text) == {"q": "x"}
        sent = _sent(upstream).body
        assert "thinking" not in sent and sent["tool_choice"]["type"] == "tool"
    rows = gateway.rows(expect=2)
    assert [r["ignored_params"] for r in rows] == ["reasoning_effort", "reasoning_effort"]


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"logprobs": True}, "logprobs"),
        ({"presence_penalty": 0.5}, "presence_penalty"),
        ({"reasoning_effort": "extreme"}, "reasoning_effort"),
        (
            {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "xs", "schema": {"type": "array"}},
                }
            },
            "response_format.json_schema.schema",
        ),
    ],
)
def test_what_claude_cannot_do_is_a_400_naming_the_param_before_any_call(
    gateway: RunningGateway, upstream: FakeUpstream, extra: dict[str, Any], param: str
) -> None:
    response = _post(gateway, {"model": "claude-chat", "messages": MESSAGES, **extra})
    assert response.status_code == 400
    assert_valid(response.json(), "ErrorResponse")
    error = response.json()["error"]
    assert (error["type"], error["code"], error["param"]) == (
        "invalid_request_error",
        "invalid_request",
        param,
    )
    with pytest.raises(openai.BadRequestError):
        gateway.client().chat.completions.create(
            model="claude-chat", messages=MESSAGES, stream=True, **extra
        )
    assert upstream.received == []
    rows = gateway.rows(expect=2)  # refused by the translation: never the provider's 4xx
    assert [r["error_class"] for r in rows] == ["untranslatable", "untranslatable"]
