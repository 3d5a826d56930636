"""POST /v1/responses through the real server with the openai SDK's client.responses:
forwarded natively to a fake OpenAI Responses API, translated to Chat Completions for an
OpenAI-compatible provider without it and (through the chat translation) for Anthropic.
Answers and stream events validate against OpenAI's published schema; rows are priced
exactly."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import httpx
import openai
import pytest

from tests.support.fake_upstream import FakeUpstream, Received
from tests.support.gateway import (
    RunningGateway,
    anthropic_provider,
    gateway_yaml,
    running_gateway,
)
from tests.support.openai_schema import assert_valid
from tests.support.sse import sse_blocks

TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "lookup",
        "description": "Look a word up.",
        "parameters": {
            "type": "object",
            "properties": {"q": {"type": "string"}},
            "required": ["q"],
            "additionalProperties": False,
        },
        "strict": True,
    }
]
SCHEMA_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "name": "greeting",
    "schema": {
        "type": "object",
        "properties": {"greeting": {"type": "string"}},
        "required": ["greeting"],
        "additionalProperties": False,
    },
    "strict": True,
}


@pytest.fixture
def gateway(upstream: FakeUpstream, sqlite_url: str) -> Iterator[RunningGateway]:
    yaml_text = gateway_yaml(
        upstream.url,
        sqlite_url,
        providers=f"""
  - {{id: compat, adapter: custom, baseUrl: "{upstream.url}/v1", apiKey: "sk-compat-secret-77",
     maxRetries: 0}}
"""
        + anthropic_provider(upstream.url, "maxRetries: 0")
        + f"""  - {{id: azure, adapter: azure_openai, baseUrl: "{upstream.url}", apiKey: "az-key",
     apiVersion: "2025-04-01-preview", maxRetries: 0}}
  - {{id: demo, adapter: echo}}""",
        models="""
  - {id: compat-model, provider: compat, name: compat-small, capabilities: [chat, tools],
     price: {input: 0.50, output: 1.50}}
  - {id: haiku, provider: claude, name: claude-haiku, capabilities: [chat, tools],
     maxOutputTokens: 2048, price: {input: 1.00, output: 5.00}}
  - {id: azure-model, provider: azure, name: my-deployment, capabilities: [chat, tools],
     price: {input: 0.15, output: 0.60}}
  - {id: echo-model, provider: demo, capabilities: [chat]}""",
        configurations="""
  - {id: translated, mode: fixed, model: compat-model}
  - {id: claude-chat, mode: fixed, model: haiku}
  - {id: azure-chat, mode: fixed, model: azure-model}
  - {id: echo-chat, mode: fixed, model: echo-model}
  - {id: rescued, mode: fixed, model: small, fallback: [translated]}
  - {id: cached, mode: fixed, model: compat-model, cache: {ttlSeconds: 60}}
  - {id: tight, mode: fixed, model: compat-model, budget: {daily: {tokens: 1000}}}
  - {id: routed, mode: criteria, criteria: {capabilities: [chat]}}""",
    )
    with running_gateway(yaml_text) as running:
        yield running


def _sent(upstream: FakeUpstream, path: str) -> Received:
    return [r for r in upstream.received if r.path == path][-1]


def _events(gateway: RunningGateway, body: dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
    """The stream's events (name checked against the data's type) as the client got them."""
    status, blocks = sse_blocks(gateway.url, "responses", body)
    events = []
    for block in blocks:
        lines = dict(line.split(": ", 1) for line in block.split("\n"))
        data = json.loads(lines["data"])
        assert lines.get("event") == data["type"], block
        events.append(data)
    return status, events


def _assert_stream_valid(events: list[dict[str, Any]]) -> None:
    for event in events:
        assert_valid(event, "ResponseStreamEvent")
    numbers = [e["sequence_number"] for e in events]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))


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


def test_native_stream_is_relayed_event_by_event_with_usage_from_completed(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", prompt_tokens=200, completion_tokens=100)
    with gateway.client().responses.create(model="chat", input="Hi", stream=True) as stream:
        events = list(stream)
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == "Hello from the fake upstream."

    status, raw_events = _events(gateway, {"model": "chat", "input": "Hi"})
    assert status == 200
    _assert_stream_valid(raw_events)
    assert raw_events[-1]["response"]["usage"]["cost"] == 0.00009  # added by the gateway
    assert "stream_options" not in _sent(upstream, "/v1/responses").body

    rows = gateway.rows(expect=2)
    assert [r["operation"] for r in rows] == ["responses_stream"] * 2
    # 200·0.15 + 100·0.60 = 90 per 1M
    assert [r["actual_cost"] for r in rows] == [Decimal("0.00009")] * 2
    assert all(r["success"] and r["usage_source"] == "provider" for r in rows)


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


def test_translated_stream_sends_the_responses_event_sequence(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("compat-small", prompt_tokens=300, completion_tokens=40)
    status, events = _events(gateway, {"model": "translated", "input": "Hi"})
    assert status == 200
    _assert_stream_valid(events)
    kinds = [e["type"] for e in events]
    assert kinds[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert kinds[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    deltas = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    assert "".join(deltas) == "Hello from the fake upstream."
    completed = events[-1]["response"]
    assert completed["usage"]["input_tokens"] == 300
    assert completed["usage"]["cost"] == 0.00021
    assert completed["output"][0]["content"][0]["text"] == "Hello from the fake upstream."
    sent = _sent(upstream, "/v1/chat/completions")
    assert sent.body["stream"] is True
    assert sent.body["stream_options"] == {"include_usage": True}

    (row,) = gateway.rows(expect=1)
    assert row["operation"] == "responses_stream"
    # 300·0.50 + 40·1.50 = 210 per 1M
    assert row["actual_cost"] == Decimal("0.00021")
    assert row["success"]


def test_translated_stream_reads_through_the_sdk(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    with gateway.client().responses.stream(model="translated", input="Hi") as stream:
        text = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
        final = stream.get_final_response()
    assert text == "Hello from the fake upstream." == final.output_text
    assert final.usage is not None and final.usage.input_tokens == 12


@pytest.mark.parametrize(
    ("configuration", "model"), [("chat", "small-model"), ("translated", "compat-small")]
)
def test_a_stream_cut_midway_ends_with_a_responses_error_event(
    gateway: RunningGateway, upstream: FakeUpstream, configuration: str, model: str
) -> None:
    upstream.behave(model, cut_after=2)
    status, events = _events(gateway, {"model": configuration, "input": "Hi"})
    assert status == 200
    _assert_stream_valid(events)
    last = events[-1]
    assert last["type"] == "error" and last["code"] == "stream_cut"
    assert not [e for e in events if e["type"] == "response.completed"]
    (row,) = gateway.rows(expect=1)
    assert row["error_class"] == "stream_cut" and not row["success"]


def test_an_upstream_error_midway_is_relayed_as_an_error_event_without_the_key(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave(
        "claude-haiku",
        stream_error_after=2,
        stream_error=("overloaded_error", "Overloaded, key sk-ant-test"),
    )
    status, events = _events(gateway, {"model": "claude-chat", "input": "Hi"})
    assert status == 200
    _assert_stream_valid(events)
    last = events[-1]
    assert last["type"] == "error" and last["code"] == "overloaded_error"
    assert "sk-ant-test" not in json.dumps(events)
    (row,) = gateway.rows(expect=1)
    assert row["error_class"] == "upstream_5xx"


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


def test_translated_stream_of_a_function_call(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("claude-haiku", tool_call=True, content="Let me look.")
    status, events = _events(gateway, {"model": "claude-chat", "input": "x?", "tools": TOOLS})
    assert status == 200
    _assert_stream_valid(events)
    arguments = "".join(
        e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta"
    )
    assert json.loads(arguments) == {"q": "x"}
    output = events[-1]["response"]["output"]
    assert [item["type"] for item in output] == ["message", "function_call"]
    assert output[1]["name"] == "lookup"


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


# --- what cannot be translated ------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"tools": [{"type": "web_search"}]}, "tools[0]"),
        ({"previous_response_id": "resp_1"}, "previous_response_id"),
        ({"background": True}, "background"),
        ({"store": True}, "store"),
        ({"include": ["reasoning.encrypted_content"]}, "include"),
        ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input[0].type"),
    ],
)
def test_what_cannot_be_translated_is_refused_naming_the_parameter(
    gateway: RunningGateway, upstream: FakeUpstream, extra: dict[str, Any], param: str
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        gateway.client().responses.create(model="translated", **{"input": "Hi", **extra})
    error = caught.value
    assert error.status_code == 400
    assert error.code == "unsupported_parameter"
    assert error.param == param
    assert_valid(error.response.json(), "ErrorResponse")
    assert not [r for r in upstream.received if r.path == "/v1/chat/completions"]


def test_bad_fields_and_unknown_configurations_get_openai_errors(
    gateway: RunningGateway,
) -> None:
    client = gateway.client()
    with pytest.raises(openai.BadRequestError) as bad:
        client.responses.create(model="chat", input=42)  # type: ignore[arg-type]
    assert (bad.value.code, bad.value.param) == ("invalid_request", "input")
    with pytest.raises(openai.BadRequestError) as bounded:
        client.responses.create(model="chat", input="Hi", max_output_tokens=0)
    assert bounded.value.param == "max_output_tokens"
    with pytest.raises(openai.NotFoundError) as unknown:
        client.responses.create(model="nope", input="Hi")
    assert unknown.value.code == "model_not_found"


# --- the rest of the pipeline, as for chat -------------------------------------------------


def test_a_fallback_answers_when_the_native_provider_fails(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", fail_always=503)
    raw = gateway.client().responses.with_raw_response.create(model="rescued", input="Hi")
    assert raw.parse().output_text == "Hello from the fake upstream."
    assert raw.headers["x-gateway-provider"] == "compat"
    (row,) = gateway.rows(expect=1)
    assert row["fallback_attempts"] == 1 and row["served_model"] == "compat-model"


def test_a_failed_native_attempt_is_retried_on_the_same_provider(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", fail_statuses=[502])
    answer = gateway.client().responses.create(model="chat", input="Hi")
    assert answer.output_text == "Hello from the fake upstream."
    assert upstream.calls["small-model"] == 2
    (row,) = gateway.rows(expect=1)
    assert row["provider_retries"] == 1 and row["success"]


def test_whole_answers_are_cached(gateway: RunningGateway, upstream: FakeUpstream) -> None:
    client = gateway.client()
    first = client.responses.with_raw_response.create(model="cached", input="Same question")
    second = client.responses.with_raw_response.create(model="cached", input="Same question")
    assert second.headers["x-gateway-cache"] == "hit"
    assert second.parse().output_text == first.parse().output_text
    assert upstream.calls["compat-small"] == 1


def test_budgets_hold_the_max_output_tokens(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    client = gateway.client()
    with pytest.raises(openai.RateLimitError) as refused:
        client.responses.create(model="tight", input="Hi", max_output_tokens=5000)
    assert refused.value.code == "budget_exceeded"
    assert upstream.calls["compat-small"] == 0
    answer = client.responses.create(model="tight", input="Hi", max_output_tokens=100)
    assert answer.output_text


def test_criteria_mode_keeps_a_history_per_responses_operation(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    gateway.client().responses.create(model="routed", input="Hi")
    status, _ = _events(gateway, {"model": "routed", "input": "Hi"})
    assert status == 200
    rows = gateway.rows(expect=2)
    assert [r["operation"] for r in rows] == ["responses", "responses_stream"]
    assert all(r["routing_policy_mode"] for r in rows)
    explained = httpx.get(
        f"{gateway.url}/admin/routing/explain",
        params={"configuration": "routed", "operation": "responses_stream"},
        headers={"authorization": "Bearer sk-test-admin-5555555555"},
    )
    assert explained.status_code == 200, explained.text
