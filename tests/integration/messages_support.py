"""Helpers for the Messages API tests: the gateway with a Claude provider and an
OpenAI-compatible one, the anthropic SDK pointed at it, what the fake upstream was sent."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from pydantic import TypeAdapter

from tests.support.fake_upstream import FakeUpstream, Received
from tests.support.gateway import (
    TEST_KEY,
    RunningGateway,
    anthropic_provider,
    gateway_yaml,
    running_gateway,
)

EVENTS: TypeAdapter[Any] = TypeAdapter(anthropic.types.RawMessageStreamEvent)
MESSAGE: TypeAdapter[Any] = TypeAdapter(anthropic.types.Message)


@pytest.fixture
def gateway(upstream: FakeUpstream, sqlite_url: str) -> Iterator[RunningGateway]:
    claude = anthropic_provider(upstream.url, "priority: 60, timeoutSeconds: 5, maxRetries: 1")
    yaml_text = gateway_yaml(
        upstream.url,
        sqlite_url,
        providers=claude,
        models="""
  - {id: haiku, provider: claude, name: claude-haiku, capabilities: [chat, tools, vision],
     contextLength: 200000, maxOutputTokens: 2048,
     price: {input: 1.00, output: 5.00, cacheRead: 0.10, cacheWrite: 1.25}}
  - {id: thinker, provider: fake, name: thinker-model, capabilities: [chat, tools, reasoning],
     price: {input: 2.00, output: 8.00}}""",
        configurations="""
  - {id: claude-chat, mode: fixed, model: haiku}
  - {id: claude-rescued, mode: fixed, model: haiku, fallback: [chat]}
  - {id: routed, mode: criteria, policyMode: economy,
     criteria: {capabilities: [chat], adapterTypes: [anthropic], preferLowestCost: true}}
  - {id: reasoner, mode: fixed, model: thinker}
  - {id: claude-budgeted, mode: fixed, model: haiku, budget: {daily: {requests: 1}}}
  - {id: claude-cached, mode: fixed, model: haiku, cache: {ttlSeconds: 60}}
  - {id: claude-limited, mode: fixed, model: haiku, rateLimit: {requestsPerMinute: 1}}
  - {id: routed-chat, mode: criteria, policyMode: economy,
     criteria: {capabilities: [chat, tools], adapterTypes: [openai], preferLowestCost: true}}""",
    )
    with running_gateway(yaml_text) as running:
        yield running


def client(gateway: RunningGateway, key: str = TEST_KEY, **kwargs: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gateway.url, api_key=key, max_retries=0, **kwargs)


def sent(upstream: FakeUpstream, path: str = "/anthropic/v1/messages") -> Received:
    found = [r for r in upstream.received if r.path == path]
    assert found, [r.path for r in upstream.received]
    return found[-1]


def lower(headers: dict[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items()}
