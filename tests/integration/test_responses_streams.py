"""POST /v1/responses streams through the real server: a native stream relayed event by
event, a translated one (Chat Completions, Anthropic) sent as the Responses event sequence,
read raw and through the openai SDK. Events validate against OpenAI's published schema;
rows are priced exactly."""

from __future__ import annotations

import json
from decimal import Decimal

from tests.integration.responses_support import TOOLS, _assert_stream_valid, _events, _sent, gateway
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import RunningGateway

__all__ = ["gateway"]


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
