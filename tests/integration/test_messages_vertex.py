"""/v1/messages to Claude on Vertex AI, natively: the anthropic SDK → the gateway → a fake
Vertex AI. The body goes as sent, less ``model`` (in the URL) plus Vertex's
``anthropic_version``, whole through ``:rawPredict`` and streamed through
``:streamRawPredict``; a Gemini model on Vertex is translated."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import anthropic

from tests.integration.gemini_support import fresh_gemini, gemini
from tests.integration.test_vertex import _vertex_path, vertex
from tests.support.fake_gemini import FakeGemini, Turn
from tests.support.gateway import TEST_KEY, RunningGateway

__all__ = ["fresh_gemini", "gemini", "vertex"]

HELLO: list[Any] = [{"role": "user", "content": "Say hello."}]
USAGE = {"promptTokenCount": 100, "candidatesTokenCount": 20}


def _client(gateway: RunningGateway) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gateway.url, api_key=TEST_KEY, max_retries=0)


def test_claude_on_vertex_takes_the_messages_body_natively(
    vertex: RunningGateway, gemini: FakeGemini
) -> None:
    gemini.script(
        "claude-sonnet-4-5",
        Turn(parts=[{"text": "Claude here."}], usage=USAGE),
        Turn(parts=[{"text": "Claude streaming here."}], usage=USAGE),
    )
    sdk = _client(vertex)
    message = sdk.messages.create(
        model="v-claude",
        max_tokens=77,
        system="Be brief.",
        messages=HELLO,
        extra_body={"top_k": 3},
    )
    assert message.content[0].type == "text" and message.content[0].text == "Claude here."
    sent = gemini.last("rawPredict")
    assert sent.path == _vertex_path("anthropic", "claude-sonnet-4-5", "rawPredict")
    assert sent.body == {
        "anthropic_version": "vertex-2023-10-16",
        "max_tokens": 77,
        "system": "Be brief.",
        "messages": HELLO,
        "top_k": 3,
    }
    assert "anthropic-version" not in {k.lower() for k in sent.headers}
    with sdk.messages.stream(model="v-claude", max_tokens=77, messages=HELLO) as stream:
        text = "".join(stream.text_stream)
    assert text == "Claude streaming here."
    assert gemini.last().method == "streamRawPredict"
    rows = vertex.rows(expect=2)
    assert {r["inbound_api"] for r in rows} == {"messages"}
    # 100·3.00 + 20·15.00 = 600 per 1M
    assert [r["actual_cost"] for r in rows] == [Decimal("0.0006")] * 2


def test_gemini_on_vertex_is_translated(vertex: RunningGateway, gemini: FakeGemini) -> None:
    gemini.script("gemini-2.5-flash", Turn(parts=[{"text": "Gemini here."}], usage=USAGE))
    message = _client(vertex).messages.create(model="v-chat", max_tokens=50, messages=HELLO)
    assert message.content[0].type == "text" and message.content[0].text == "Gemini here."
    assert gemini.last().method == "generateContent"


def test_count_tokens_for_claude_on_vertex_is_vertex_s_count(
    vertex: RunningGateway, gemini: FakeGemini
) -> None:
    system = "Count me."
    raw = _client(vertex).messages.with_raw_response.count_tokens(
        model="v-claude", system=system, messages=HELLO
    )
    assert raw.headers["x-gateway-token-count"] == "provider"
    expected = len(json.dumps(HELLO)) + len(json.dumps(system))
    assert raw.parse().input_tokens == expected
    sent = gemini.last("rawPredict")
    assert sent.path == _vertex_path("anthropic", "count-tokens", "rawPredict")
    assert sent.body == {
        "model": "claude-sonnet-4-5",
        "anthropic_version": "vertex-2023-10-16",
        "system": system,
        "messages": HELLO,
    }
    gemini_count = _client(vertex).messages.with_raw_response.count_tokens(
        model="v-chat", messages=HELLO
    )
    assert gemini_count.headers["x-gateway-token-count"] == "estimate"
    assert vertex.rows() == []
