"""Helpers for the /v1/responses tests: the gateway with a native, a translated (Chat
Completions), an Anthropic, an Azure and an echo provider; what the upstream was sent;
a stream's events, checked against OpenAI's published schema."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

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
