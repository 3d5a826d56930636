"""/v1/messages to Claude on AWS Bedrock, natively: the anthropic SDK → the gateway → a fake
Bedrock. The client's body goes through InvokeModel (streamed: InvokeModelWithResponseStream)
as sent, less ``model`` and ``stream``, with ``anthropic_version`` and the betas in the
body, signed with SigV4; the stream's chunks come back as Anthropic's events, Bedrock's
metrics left out; a model that is not Claude is translated through Converse."""

from __future__ import annotations

import base64
import json
from decimal import Decimal
from typing import Any

import anthropic
import httpx
import pytest

from tests.integration.bedrock_support import (
    CLAUDE,
    _fresh,
    aws_environment,
    bedrock,
    gateway,
    new_rows,
)
from tests.support.fake_bedrock import Answer, FakeBedrock, claude_count
from tests.support.gateway import TEST_KEY, RunningGateway

__all__ = ["_fresh", "aws_environment", "bedrock", "gateway"]

LOOKUP: dict[str, Any] = {
    "name": "lookup",
    "description": "Look a word up.",
    "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
}
ASK: list[Any] = [{"role": "user", "content": "What is an owl?"}]
# 100·0.80 + 20·4.00 + 1000·0.08 + 200·1.00 = 440 per 1M
CACHED = Answer(
    text="Cached.", input_tokens=100, output_tokens=20, cache_read=1000, cache_write=200
)
CACHED_COST = Decimal("0.00044")


def _sdk(gateway: RunningGateway) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gateway.url, api_key=TEST_KEY, max_retries=0)


def test_a_message_goes_to_invoke_as_sent_and_comes_back_priced_with_cache_tokens(
    gateway: RunningGateway, bedrock: FakeBedrock
) -> None:
    bedrock.script(CLAUDE, CACHED)
    before = len(gateway.rows())
    system: Any = [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    message = _sdk(gateway).messages.create(
        model="claude-chat",
        max_tokens=300,
        system=system,
        messages=ASK,
        metadata={"user_id": "u-1"},
        extra_body={"top_k": 5},
        extra_headers={"anthropic-beta": "context-1m-2025-08-07, token-efficient-tools-2025-02-19"},
    )
    assert bedrock.refused == []
    assert message.content[0].type == "text" and message.content[0].text == "Cached."
    assert message.usage.cache_read_input_tokens == 1000
    assert message.usage.cache_creation_input_tokens == 200
    (sent,) = bedrock.sent("invoke")
    assert sent.model_id == CLAUDE
    assert sent.body == {
        "anthropic_version": "bedrock-2023-05-31",
        "anthropic_beta": ["context-1m-2025-08-07", "token-efficient-tools-2025-02-19"],
        "max_tokens": 300,
        "system": system,
        "messages": ASK,
        "metadata": {"user_id": "u-1"},
        "top_k": 5,
    }
    assert sent.headers["Authorization"].startswith("AWS4-HMAC-SHA256 ")
    assert not {k.lower() for k in sent.headers} & {"anthropic-version", "anthropic-beta"}
    (row,) = new_rows(gateway, before)
    assert row["inbound_api"] == "messages"
    assert (row["actual_input_tokens"], row["actual_output_tokens"]) == (1300, 20)
    assert row["actual_cost"] == CACHED_COST


def test_a_stream_is_relayed_event_by_event_without_bedrock_metrics(
    gateway: RunningGateway, bedrock: FakeBedrock
) -> None:
    bedrock.script(CLAUDE, CACHED)
    before = len(gateway.rows())
    body = {"model": "claude-chat", "max_tokens": 300, "messages": ASK, "stream": True}
    headers = {"x-api-key": TEST_KEY, "anthropic-version": "2023-06-01"}
    with httpx.stream("POST", f"{gateway.url}/v1/messages", json=body, headers=headers) as raw:
        assert raw.status_code == 200
        text = raw.read().decode()
    assert "amazon-bedrock-invocationMetrics" not in text
    names = [line[len("event: ") :] for line in text.splitlines() if line.startswith("event: ")]
    assert names[:2] == ["message_start", "ping"] and names[-1] == "message_stop"
    assert "content_block_delta" in names
    (sent,) = bedrock.sent("invoke-with-response-stream")
    assert "stream" not in sent.body and sent.body["anthropic_version"] == "bedrock-2023-05-31"
    with _sdk(gateway).messages.stream(model="claude-chat", max_tokens=300, messages=ASK) as stream:
        streamed = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert streamed == "Cached."
    assert final.usage.cache_read_input_tokens == 1000 and final.usage.output_tokens == 20
    rows = new_rows(gateway, before, expect=2)
    assert [r["inbound_api"] for r in rows] == ["messages"] * 2
    assert [r["actual_cost"] for r in rows] == [CACHED_COST] * 2
    assert bedrock.refused == []


def test_a_thinking_tool_loop_sends_the_signed_thinking_back_as_it_came(
    gateway: RunningGateway, bedrock: FakeBedrock
) -> None:
    call = {"toolUseId": "toolu_b1", "name": "lookup", "input": {"q": "owl"}}
    bedrock.script(
        CLAUDE,
        Answer(reasoning="I should look.", text="", tool_uses=[call]),
        Answer(text="An owl is a bird."),
    )
    before = len(gateway.rows())
    sdk = _sdk(gateway)
    thinking: Any = {"type": "enabled", "budget_tokens": 2048}
    with sdk.messages.stream(
        model="claude-chat", max_tokens=4000, thinking=thinking, tools=[LOOKUP], messages=ASK
    ) as stream:
        first = stream.get_final_message()
    assert [b.type for b in first.content] == ["thinking", "tool_use"], first.content
    thought, use = first.content
    assert thought.type == "thinking" and thought.signature == "sig-1"
    assert thought.thinking == "I should look."
    assert use.type == "tool_use" and use.input == {"q": "owl"} and use.id == "toolu_b1"
    assert first.stop_reason == "tool_use"
    turn: list[Any] = [
        *ASK,
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "a bird"}],
        },
    ]
    second = sdk.messages.create(
        model="claude-chat", max_tokens=4000, thinking=thinking, tools=[LOOKUP], messages=turn
    )
    assert second.content[-1].type == "text" and second.content[-1].text == "An owl is a bird."
    assert bedrock.refused == []
    sent = bedrock.sent("invoke")[-1]
    assert sent.body["thinking"] == thinking and sent.body["tools"] == [LOOKUP]
    assert sent.body["messages"][1]["content"][0] == {
        "type": "thinking",
        "thinking": "I should look.",
        "signature": "sig-1",
    }
    assert sent.body["messages"][2] == turn[2]
    rows = new_rows(gateway, before, expect=2)
    assert [r["inbound_api"] for r in rows] == ["messages"] * 2


def test_bedrock_errors_are_anthropic_errors(gateway: RunningGateway, bedrock: FakeBedrock) -> None:
    bedrock.script(CLAUDE, Answer(status=400, exception="ValidationException"))
    with pytest.raises(anthropic.BadRequestError) as refused:
        _sdk(gateway).messages.create(model="claude-chat", max_tokens=10, messages=ASK)
    assert refused.value.body["type"] == "error"  # type: ignore[index]
    assert refused.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    bedrock.script(CLAUDE, Answer(stream_exception="ThrottlingException"))
    with (
        pytest.raises(anthropic.RateLimitError),
        _sdk(gateway).messages.stream(model="claude-chat", max_tokens=10, messages=ASK) as stream,
    ):
        stream.get_final_message()


def test_an_exception_mid_stream_ends_it_with_an_error_event(
    gateway: RunningGateway, bedrock: FakeBedrock
) -> None:
    bedrock.script(
        CLAUDE,
        Answer(
            text="Half an answer.",
            stream_exception="ModelStreamErrorException",
            stream_exception_after=4,
        ),
    )
    with (
        pytest.raises(anthropic.APIStatusError) as broken,
        _sdk(gateway).messages.stream(model="claude-chat", max_tokens=10, messages=ASK) as stream,
    ):
        stream.get_final_message()
    assert "fake stream failure" in str(broken.value)


def test_a_model_that_is_not_claude_is_translated_through_converse(
    gateway: RunningGateway, bedrock: FakeBedrock
) -> None:
    bedrock.script("amazon.nova-lite-v1:0", Answer(text="Nova here."))
    message = _sdk(gateway).messages.create(model="nova-chat", max_tokens=50, messages=ASK)
    assert message.content[0].type == "text" and message.content[0].text == "Nova here."
    assert len(bedrock.sent("converse")) == 1 and bedrock.sent("invoke") == []


def test_count_tokens_for_claude_on_bedrock_is_bedrock_s_count(
    gateway: RunningGateway, bedrock: FakeBedrock
) -> None:
    sdk = _sdk(gateway)
    before = len(gateway.rows())
    raw = sdk.messages.with_raw_response.count_tokens(
        model="claude-chat",
        system="Count me.",
        messages=ASK,
        extra_headers={"anthropic-beta": "token-counting-2024-11-01"},
    )
    assert bedrock.refused == []
    assert raw.headers["x-gateway-token-count"] == "provider"
    (sent,) = bedrock.sent("count-tokens")
    assert sent.model_id == CLAUDE
    assert sent.headers["Authorization"].startswith("AWS4-HMAC-SHA256 ")
    inner = json.loads(base64.b64decode(sent.body["input"]["invokeModel"]["body"]))
    assert inner == {
        "anthropic_version": "bedrock-2023-05-31",
        "anthropic_beta": ["token-counting-2024-11-01"],
        "system": "Count me.",
        "messages": ASK,
        "max_tokens": 1,
    }
    assert raw.parse().input_tokens == claude_count(inner)
    nova = sdk.messages.with_raw_response.count_tokens(model="nova-chat", messages=ASK)
    assert nova.headers["x-gateway-token-count"] == "estimate"
    assert len(gateway.rows()) == before


def test_a_model_bedrock_does_not_count_for_gets_the_estimate(
    gateway: RunningGateway, bedrock: FakeBedrock
) -> None:
    bedrock.script(CLAUDE, Answer(status=400, exception="ValidationException"))
    raw = _sdk(gateway).messages.with_raw_response.count_tokens(model="claude-chat", messages=ASK)
    assert raw.headers["x-gateway-token-count"] == "estimate"
    assert raw.parse().input_tokens > 0
    assert len(bedrock.sent("count-tokens")) == 1
