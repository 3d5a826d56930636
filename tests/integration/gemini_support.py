"""Helpers for the Gemini tests: the fake Gemini API and the gateway with a Gemini provider
(and the OpenAI-compatible one of ``gateway_yaml``, on the fake OpenAI upstream)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.fake_gemini import API_KEY, FakeGemini
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import RunningGateway, gateway_yaml, running_gateway

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
# USD per 1M tokens of the models below.
FLASH_PRICE = {"input": "0.30", "output": "2.50", "cacheRead": "0.075"}
THINKER_PRICE = {"input": "2.00", "output": "12.00", "cacheRead": "0.20"}


@pytest.fixture(scope="module")
def gemini() -> Iterator[FakeGemini]:
    fake = FakeGemini()
    yield fake
    fake.close()


@pytest.fixture
def fresh_gemini(gemini: FakeGemini) -> FakeGemini:
    gemini.reset()
    return gemini


def _price(price: dict[str, str]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in price.items()) + "}"


@pytest.fixture
def gateway(
    fresh_gemini: FakeGemini, upstream: FakeUpstream, sqlite_url: str
) -> Iterator[RunningGateway]:
    providers = (
        f'  - {{id: google, adapter: gemini, baseUrl: "{fresh_gemini.base_url}",\n'
        f'     apiKey: "{API_KEY}", timeoutSeconds: 5, maxRetries: 2}}\n'
    )
    yaml_text = gateway_yaml(
        upstream.url,
        sqlite_url,
        providers=providers,
        models=f"""
  - {{id: flash, provider: google, name: gemini-2.5-flash,
     capabilities: [chat, tools, vision, streaming, json_mode, completion],
     price: {_price(FLASH_PRICE)}}}
  - {{id: thinker, provider: google, name: gemini-3-pro-thinking,
     capabilities: [chat, tools, streaming], price: {_price(THINKER_PRICE)}}}
  - {{id: gembed, provider: google, name: gemini-embedding-001, capabilities: [embeddings],
     price: {{input: 0.15, output: 0}}}}""",
        configurations="""
  - {id: gemini-chat, mode: fixed, model: flash}
  - {id: gemini-think, mode: fixed, model: thinker}
  - {id: gemini-embed, mode: fixed, model: gembed}
  - {id: google-only, mode: criteria,
     criteria: {capabilities: [chat], adapterTypes: [gemini], preferLowestCost: true}}
  - {id: cheapest, mode: criteria,
     criteria: {capabilities: [chat, tools], adapterTypes: [openai, gemini],
                preferLowestCost: true}}
  - {id: vision-routed, mode: criteria,
     criteria: {capabilities: [chat, json_mode], adapterTypes: [openai, gemini],
                preferLowestCost: true}}""",
    )
    with running_gateway(yaml_text) as running:
        yield running
