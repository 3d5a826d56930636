"""POST /v1/responses whole answers through the real server with the openai SDK's
client.responses: forwarded natively to a fake OpenAI Responses API (and Azure's),
translated to Chat Completions for an OpenAI-compatible provider without it and (through
the chat translation) for Anthropic: function tools in a loop, a JSON schema text format,
the echo demo. Answers validate against OpenAI's published schema; rows are priced
exactly."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from tests.integration.responses_support import (
    SCHEMA_FORMAT,
    TOOLS,
    _assert_stream_valid,
    _events,
    _sent,
    gateway,
)
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import RunningGateway
from tests.support.openai_schema import assert_valid

__all__ = ["gateway"]


# --- native: forwarded as is --------------------------------------------------------------


def test_native_whole_answer_is_forwarded_priced_and_recorded(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", prompt_tokens=1000, completion_tokens=500)
    raw = gateway.client().responses.with_raw_response.create(
        model="chat", input="Say hello.", instructions="Be brief.", max_output_tokens=64
    )
    answer = raw.parse()
    assert answer.output_text == "Hello from the fake upstream."
    assert answer.usage is not None
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (1000, 500)
    # 1000·0.15 + 500·0.60 = 450 per 1M
    assert raw.headers["x-gateway-cost-usd"] == "0.00045"
    assert raw.headers["x-gateway-provider"] == "fake"
    assert raw.headers["x-gateway-model"] == "small"
    body = raw.http_response.json()
    assert body["usage"]["cost"] == 0.00045
    assert_valid(body, "Response")

    sent = _sent(upstream, "/v1/responses")
    assert sent.body["model"] == "small-model"
    assert sent.body["input"] == "Say hello."
    assert sent.body["instructions"] == "Be brief."
    assert "stream_options" not in sent.body
    assert sent.headers["Authorization"] == "Bearer sk-upstream-secret-42"

    (row,) = gateway.rows(expect=1)
    assert row["operation"] == "responses"
    assert (row["actual_input_tokens"], row["actual_output_tokens"]) == (1000, 500)
    assert row["actual_cost"] == Decimal("0.00045")
    assert row["usage_source"] == "provider"
    assert row["success"] and row["http_status"] == 200


def test_native_forwards_what_only_a_stateful_api_can_serve(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    answer = gateway.client().responses.create(
        model="chat", input="And then?", previous_response_id="resp_earlier", store=True
    )
    assert answer.output_text
    sent = _sent(upstream, "/v1/responses")
    assert sent.body["previous_response_id"] == "resp_earlier"
    assert sent.body["store"] is True


def test_azure_responses_go_to_its_responses_path_with_the_deployment_as_model(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    answer = gateway.client().responses.create(model="azure-chat", input="Hi")
    assert answer.output_text == "Hello from the fake upstream."
    sent = _sent(upstream, "/openai/responses")
    assert sent.query == {"api-version": "2025-04-01-preview"}
    assert sent.body["model"] == "my-deployment"
    assert sent.headers["api-key"] == "az-key"


# --- translated: Chat Completions underneath ----------------------------------------------


def test_translated_whole_answer_is_a_valid_response_priced_exactly(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("compat-small", prompt_tokens=1000, completion_tokens=200)
    raw = gateway.client().responses.with_raw_response.create(
        model="translated",
        input="Say hello.",
        instructions="Be brief.",
        max_output_tokens=50,
        temperature=0.3,
        top_p=0.9,
    )
    answer = raw.parse()
    assert answer.output_text == "Hello from the fake upstream."
    assert answer.status == "completed"
    assert answer.usage is not None and answer.usage.total_tokens == 1200
    assert answer.instructions == "Be brief." and answer.store is False
    # 1000·0.50 + 200·1.50 = 800 per 1M
    assert raw.headers["x-gateway-cost-usd"] == "0.0008"
    assert_valid(raw.http_response.json(), "Response")

    sent = _sent(upstream, "/v1/chat/completions")
    assert sent.body["model"] == "compat-small"
    assert sent.body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Say hello."},
    ]
    assert (sent.body["max_tokens"], sent.body["temperature"], sent.body["top_p"]) == (
        50,
        0.3,
        0.9,
    )
    assert "input" not in sent.body and "max_output_tokens" not in sent.body

    (row,) = gateway.rows(expect=1)
    assert row["operation"] == "responses"
    assert row["actual_cost"] == Decimal("0.0008")
    assert row["provider"] == "compat"


@pytest.mark.parametrize("configuration", ["chat", "translated", "claude-chat"])
def test_function_tools_in_a_loop(
    gateway: RunningGateway, upstream: FakeUpstream, configuration: str
) -> None:
    """The model calls a tool; the client runs it and sends its output back."""
    client = gateway.client()
    for model in ("small-model", "compat-small", "claude-haiku"):
        upstream.behave(model, tool_call=True)
    first = client.responses.create(model=configuration, input="Look up x.", tools=TOOLS)
    assert_valid(first.model_dump(mode="json", exclude_unset=True), "Response")
    (call,) = [item for item in first.output if item.type == "function_call"]
    assert call.name == "lookup" and json.loads(call.arguments) == {"q": "x"}

    for model in ("small-model", "compat-small", "claude-haiku"):
        upstream.behave(model, content="x means ex.")
    history: list[Any] = [
        {"role": "user", "content": "Look up x."},
        *[item.model_dump(exclude_none=True) for item in first.output],
        {"type": "function_call_output", "call_id": call.call_id, "output": "ex"},
    ]
    second = client.responses.create(model=configuration, input=history, tools=TOOLS)
    assert second.output_text == "x means ex."
    if configuration == "translated":
        messages = _sent(upstream, "/v1/chat/completions").body["messages"]
        assert messages[-2]["role"] == "assistant"
        assert messages[-2]["tool_calls"][0]["id"] == call.call_id
        assert messages[-2]["tool_calls"][0]["function"]["name"] == "lookup"
        assert messages[-1] == {"role": "tool", "tool_call_id": call.call_id, "content": "ex"}
    if configuration == "claude-chat":
        sent = _sent(upstream, "/anthropic/v1/messages").body
        kinds = [block["type"] for m in sent["messages"] for block in _blocks(m)]
        assert "tool_use" in kinds and "tool_result" in kinds
    rows = gateway.rows(expect=2)
    assert all(r["operation"] == "responses" and r["success"] for r in rows)


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    return content if isinstance(content, list) else [{"type": "text"}]


@pytest.mark.parametrize("configuration", ["translated", "claude-chat"])
def test_text_format_json_schema(
    gateway: RunningGateway, upstream: FakeUpstream, configuration: str
) -> None:
    upstream.behave("compat-small", content='{"greeting": "hi"}')
    upstream.behave("claude-haiku", forced_input={"greeting": "hi"})
    answer = gateway.client().responses.create(
        model=configuration, input="Greet me.", text={"format": SCHEMA_FORMAT}
    )
    assert json.loads(answer.output_text) == {"greeting": "hi"}
    assert answer.text is not None and answer.text.format is not None
    assert answer.text.format.type == "json_schema"
    if configuration == "translated":
        sent = _sent(upstream, "/v1/chat/completions").body
        assert sent["response_format"] == {
            "type": "json_schema",
            "json_schema": {
                "name": "greeting",
                "schema": SCHEMA_FORMAT["schema"],
                "strict": True,
            },
        }


def test_the_echo_demo_answers_responses_whole_and_streamed(gateway: RunningGateway) -> None:
    client = gateway.client()
    answer = client.responses.create(model="echo-chat", input="ping pong")
    assert "ping pong" in answer.output_text
    assert_valid(answer.model_dump(mode="json", exclude_unset=True), "Response")
    status, events = _events(gateway, {"model": "echo-chat", "input": "ping pong"})
    assert status == 200
    _assert_stream_valid(events)
    assert "ping pong" in events[-1]["response"]["output"][0]["content"][0]["text"]
