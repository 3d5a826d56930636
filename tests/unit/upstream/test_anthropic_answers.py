"""Anthropic answers, usage and errors translated back to OpenAI shapes (pure)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.domain.usage import Usage
from gateway.upstream.anthropic.errors import map_error
from gateway.upstream.anthropic.translate import (
    from_messages_response,
    usage_from_anthropic,
)
from gateway.upstream.error_body import ErrorBody, read_error_body
from tests.support.openai_schema import assert_valid

MODEL = "claude-sonnet-4-5"


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


# --- response and usage --------------------------------------------------------------------


def anthropic_message(content: list[dict[str, Any]], stop_reason: str) -> dict[str, Any]:
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": content,
        "stop_reason": stop_reason,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def test_text_response_becomes_chat_completion() -> None:
    resp = anthropic_message([text("Hello "), text("there")], "end_turn")
    out = from_messages_response(resp, created=1700000000)
    assert out["id"] == "msg_01"
    assert out["object"] == "chat.completion"
    assert out["created"] == 1700000000
    assert out["model"] == "claude-sonnet-4-5-20250929"
    choice = out["choices"][0]
    assert choice["index"] == 0
    assert choice["message"]["role"] == "assistant"
    assert choice["message"]["content"] == "Hello there"
    assert "tool_calls" not in choice["message"]
    assert choice["finish_reason"] == "stop"
    assert out["usage"] == {
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "total_tokens": 15,
        "prompt_tokens_details": {"cached_tokens": 0},
    }


def test_tool_use_response_becomes_tool_calls_with_null_content() -> None:
    block = {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}}
    out = from_messages_response(anthropic_message([block], "tool_use"), created=1)
    message = out["choices"][0]["message"]
    assert message["content"] is None
    assert message["tool_calls"] == [
        {
            "id": "toolu_1",
            "type": "function",
            "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
        }
    ]
    assert json.loads(message["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris"}
    assert out["choices"][0]["finish_reason"] == "tool_calls"


@pytest.mark.parametrize(
    ("stop_reason", "finish"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "tool_calls"),
        ("refusal", "content_filter"),
    ],
)
def test_stop_reason_maps_to_finish_reason(stop_reason: str, finish: str) -> None:
    out = from_messages_response(anthropic_message([text("x")], stop_reason), created=1)
    assert out["choices"][0]["finish_reason"] == finish


def test_usage_counts_cache_tokens_into_total_input() -> None:
    usage = usage_from_anthropic(
        {
            "input_tokens": 20,
            "cache_read_input_tokens": 1000,
            "cache_creation_input_tokens": 300,
            "output_tokens": 7,
        }
    )
    assert usage == Usage(
        input_tokens=1320, output_tokens=7, cache_read_tokens=1000, cache_write_tokens=300
    )


def test_response_prompt_tokens_include_cache_tokens() -> None:
    resp = anthropic_message([text("x")], "end_turn")
    resp["usage"] = {
        "input_tokens": 20,
        "cache_read_input_tokens": 1000,
        "cache_creation_input_tokens": None,
        "output_tokens": 7,
    }
    out = from_messages_response(resp, created=1)
    assert out["usage"] == {
        "prompt_tokens": 1020,
        "completion_tokens": 7,
        "total_tokens": 1027,
        "prompt_tokens_details": {"cached_tokens": 1000},
    }


# --- errors --------------------------------------------------------------------------------


def anthropic_error(kind: str, message: str) -> ErrorBody:
    raw = json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()
    return read_error_body(raw, "application/json", None, None)


@pytest.mark.parametrize(
    ("status", "kind", "openai_type"),
    [
        (400, "invalid_request_error", "invalid_request_error"),
        (401, "authentication_error", "authentication_error"),
        (403, "permission_error", "permission_error"),
        (404, "not_found_error", "invalid_request_error"),
        (413, "request_too_large", "invalid_request_error"),
        (429, "rate_limit_error", "rate_limit_error"),
        (500, "api_error", "api_error"),
        (529, "overloaded_error", "api_error"),
    ],
)
def test_anthropic_error_maps_to_openai_envelope(status: int, kind: str, openai_type: str) -> None:
    client_status, envelope = map_error(status, anthropic_error(kind, "details here"))
    assert client_status == status
    assert envelope == {
        "error": {"message": "details here", "type": openai_type, "param": None, "code": kind}
    }


def test_unparseable_error_body_gets_a_generic_message() -> None:
    page = read_error_body(b"<html><script>x()</script>Bad Gateway</html>", "text/html", None, None)
    client_status, envelope = map_error(502, page)
    assert client_status == 502
    assert envelope["error"]["type"] == "api_error"
    assert envelope["error"]["code"] == "upstream_error"
    assert "502" in envelope["error"]["message"] and "non-JSON" in envelope["error"]["message"]
    assert "<" not in envelope["error"]["message"]
    assert "script" not in envelope["error"]["message"]


def test_an_openai_shaped_body_from_before_anthropic_keeps_its_envelope() -> None:
    raw = b'{"error": {"message": "blocked by the proxy", "type": "invalid_request_error"}}'
    client_status, envelope = map_error(400, read_error_body(raw, "application/json", None, None))
    assert client_status == 400
    assert envelope["error"]["message"] == "blocked by the proxy"


def test_error_body_on_success_status_takes_status_from_its_type() -> None:
    client_status, envelope = map_error(200, anthropic_error("rate_limit_error", "slow down"))
    assert client_status == 429
    assert envelope["error"]["type"] == "rate_limit_error"


@pytest.mark.parametrize(
    "stop_reason", ["end_turn", "max_tokens", "tool_use", "refusal", "stop_sequence"]
)
def test_translated_answers_conform_to_openais_schema(stop_reason: str) -> None:
    tool = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}}
    for content in ([text("Hi")], [tool], [text("Let me see."), tool], []):
        out = from_messages_response(anthropic_message(content, stop_reason), created=1)
        assert_valid(out, "CreateChatCompletionResponse")
