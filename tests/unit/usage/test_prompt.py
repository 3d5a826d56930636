"""The prompt count is at least what a body sends upstream: text counted, the rest by size."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gateway.domain.model import Endpoint
from gateway.upstream.anthropic.translate import to_messages_request
from gateway.usage.prompt import count_request_tokens
from gateway.usage.tokens import CharEstimateCounter, TiktokenCounter
from gateway.usage.uncounted import IMAGE_TOKEN_BOUND

CHARS = CharEstimateCounter()
MESSAGES = [{"role": "user", "content": "hi"}]


def _schema(size: int) -> dict[str, Any]:
    """A JSON schema of about ``size`` bytes: many properties, each with a description."""
    properties = {
        f"field_{i}": {"type": "string", "description": "x" * 80} for i in range(size // 120)
    }
    return {"type": "object", "properties": properties}


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")).encode())


def _count(body: dict[str, Any], endpoint: Endpoint = Endpoint.CHAT) -> int:
    return count_request_tokens(CHARS, body, endpoint, "m")


SCHEMA = _schema(40_000)
FILE_DATA = "data:application/pdf;base64," + "QUJD" * 10_000


@pytest.mark.parametrize(
    ("endpoint", "body", "carried"),
    [
        (
            Endpoint.CHAT,
            {
                "messages": MESSAGES,
                "response_format": {"type": "json_schema", "json_schema": {"schema": SCHEMA}},
            },
            SCHEMA,
        ),
        (Endpoint.CHAT, {"messages": MESSAGES, "functions": [{"parameters": SCHEMA}]}, SCHEMA),
        (
            Endpoint.CHAT,
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "file", "file": {"file_data": FILE_DATA}}],
                    }
                ]
            },
            FILE_DATA,
        ),
        (
            Endpoint.RESPONSES,
            {"input": "hi", "text": {"format": {"type": "json_schema", "schema": SCHEMA}}},
            SCHEMA,
        ),
        (
            Endpoint.RESPONSES,
            {
                "input": [
                    {
                        "role": "user",
                        "content": [{"type": "input_file", "file_data": FILE_DATA}],
                    }
                ]
            },
            FILE_DATA,
        ),
        (Endpoint.COMPLETIONS, {"prompt": "hi", "suffix": FILE_DATA}, FILE_DATA),
        (Endpoint.EMBEDDINGS, {"input": "hi", "unknown_field": SCHEMA}, SCHEMA),
    ],
    ids=[
        "chat-response_format",
        "chat-functions",
        "chat-file",
        "responses-text.format",
        "responses-input_file",
        "completions-suffix",
        "embeddings-unknown",
    ],
)
def test_what_the_body_carries_beyond_text_counts_at_least_its_size(
    endpoint: Endpoint, body: dict[str, Any], carried: Any
) -> None:
    # Before, each of these counted only the few tokens of "hi".
    assert _count({"model": "m", **body}, endpoint) >= _size(carried)


def test_parameters_are_not_counted_and_an_image_counts_its_bound_not_its_bytes() -> None:
    plain = {"model": "m", "messages": MESSAGES}
    with_parameters = {
        **plain,
        "temperature": 0.2,
        "max_tokens": 100,
        "stream": True,
        "stream_options": {"include_usage": True},
        "stop": ["\n\n"],
        "metadata": {"team": "x" * 500},
        "user": "u-1",
        "seed": 7,
    }
    assert _count(with_parameters) == _count(plain)
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 50_000}}
    with_image = {"model": "m", "messages": [{"role": "user", "content": ["hi", image]}]}
    # The string part "hi" is not a part object: its JSON counts (4); the image counts the
    # most one image costs upstream, whatever its bytes.
    assert _count(with_image) == _count(plain) - 1 + 4 + IMAGE_TOKEN_BOUND
    small = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    with_small = {"model": "m", "messages": [{"role": "user", "content": ["hi", small]}]}
    assert _count(with_small) == _count(with_image)
    responses = {
        "model": "m",
        "input": [
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "hi"},
                    {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
                    {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
                ],
            }
        ],
    }
    text_only = {
        "model": "m",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
    }
    two_images = _count(responses, Endpoint.RESPONSES) - _count(text_only, Endpoint.RESPONSES)
    assert two_images == 2 * IMAGE_TOKEN_BOUND


def test_tool_call_ids_and_unknown_message_fields_count_by_size() -> None:
    plain = {"messages": [{"role": "tool", "content": "42"}]}
    with_id = {"messages": [{"role": "tool", "content": "42", "tool_call_id": "call_1"}]}
    assert _count(with_id) == _count(plain) + len('"tool_call_id":"call_1"')


def _anthropic_text(payload: dict[str, Any]) -> list[str]:
    """What a /v1/messages body gives Claude to read: system, text, tool use and results,
    and the tools' JSON."""
    system = payload.get("system")
    texts = [system] if isinstance(system, str) else [s["text"] for s in system or []]
    for message in payload["messages"]:
        for block in message["content"]:
            if block["type"] == "text":
                texts.append(block["text"])
            elif block["type"] == "tool_use":
                texts += [block["id"], block["name"], json.dumps(block["input"])]
            elif block["type"] == "tool_result":
                content = block.get("content", [])
                texts.append(block["tool_use_id"])
                if isinstance(content, str):
                    texts.append(content)
                else:
                    texts += [part["text"] for part in content]
    if payload.get("tools"):
        texts.append(json.dumps(payload["tools"], separators=(",", ":")))
    return texts


@pytest.mark.parametrize(
    "response_format",
    [
        None,
        {"type": "json_object"},
        {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "object"}}},
        {"type": "json_schema", "json_schema": {"name": "big", "schema": SCHEMA}},
    ],
    ids=["none", "json_object", "small-schema", "large-schema"],
)
def test_the_anthropic_translation_sends_no_more_than_was_counted(
    tiktoken_encodings: Path, response_format: dict[str, Any] | None
) -> None:
    body: dict[str, Any] = {
        "model": "claude",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "What is the weather in Paris?"},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21 C"},
        ],
        "tools": [{"type": "function", "function": {"name": "weather", "parameters": SCHEMA}}],
        "response_format": response_format,
    }
    counter = TiktokenCounter()
    counted = count_request_tokens(counter, body, Endpoint.CHAT, "gpt-4o")
    payload = to_messages_request(body, "claude-sonnet", 1024)
    sent = sum(counter.count_text(text, "gpt-4o") for text in _anthropic_text(payload))
    assert sent <= counted
