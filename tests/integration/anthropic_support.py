"""Helpers for the Anthropic tests: the gateway with a Claude provider (and a Mistral one),
what the fake Messages API was sent, a stream's row."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.fake_upstream import FakeUpstream, Received
from tests.support.gateway import RunningGateway, anthropic_provider, gateway_yaml, running_gateway

MESSAGES: list[Any] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Say hello."},
]
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a word up.",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
    }
]


@pytest.fixture
def gateway(upstream: FakeUpstream, sqlite_url: str) -> Iterator[RunningGateway]:
    claude = anthropic_provider(upstream.url, "priority: 60, timeoutSeconds: 5, maxRetries: 1")
    mistral = (
        f'  - {{id: mistral-co, adapter: mistral, baseUrl: "{upstream.url}/v1", apiKey: "sk-m"}}'
    )
    yaml_text = gateway_yaml(
        upstream.url,
        sqlite_url,
        providers=claude + mistral,
        models="""
  - {id: haiku, provider: claude, name: claude-haiku, capabilities: [chat, tools, vision],
     contextLength: 200000, maxOutputTokens: 2048,
     price: {input: 1.00, output: 5.00, cacheRead: 0.10, cacheWrite: 1.25}}
  - {id: mistral, provider: mistral-co, name: mistral-small, capabilities: [chat, tools]}""",
        configurations="""
  - {id: claude-chat, mode: fixed, model: haiku}
  - {id: claude-rescued, mode: fixed, model: haiku, fallback: [chat]}
  - {id: claude-observed, mode: fixed, model: haiku, operationCapabilityEnforcement: observe}
  - {id: routed, mode: criteria, policyMode: economy,
     criteria: {capabilities: [chat], adapterTypes: [openai, anthropic],
                preferLowestCost: true}}""",
    )
    with running_gateway(yaml_text) as running:
        yield running


def _sent(upstream: FakeUpstream) -> Received:
    (sent,) = [r for r in upstream.received if r.path == "/anthropic/v1/messages"][-1:]
    return sent


def _stream_rows(gateway: RunningGateway) -> list[dict[str, Any]]:
    """A stream's row lands just after the client read [DONE]: wait for it briefly."""
    for _ in range(200):
        rows = gateway.rows()
        if rows:
            return rows
        time.sleep(0.01)
    return []
