"""Criteria routing across adapter types: an OpenAI-compatible, a Gemini and a Bedrock
model, chosen by each configuration's criteria and signals (list price, capabilities)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.bedrock_support import MESSAGES, NOVA, bedrock
from tests.support.fake_bedrock import API_KEY as BEDROCK_KEY
from tests.support.fake_bedrock import REGION, Answer, FakeBedrock
from tests.support.fake_gemini import API_KEY as GEMINI_KEY
from tests.support.fake_gemini import FakeGemini, Turn
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import RunningGateway, gateway_yaml, running_gateway

__all__ = ["bedrock"]


@pytest.fixture
def gemini() -> Iterator[FakeGemini]:
    fake = FakeGemini()
    yield fake
    fake.close()


@pytest.fixture
def gateway(
    upstream: FakeUpstream, gemini: FakeGemini, bedrock: FakeBedrock, tmp_path: Path
) -> Iterator[RunningGateway]:
    bedrock.reset()
    providers = f"""
  - {{id: google, adapter: gemini, baseUrl: "{gemini.base_url}", apiKey: "{GEMINI_KEY}"}}
  - {{id: aws, adapter: bedrock, region: {REGION}, baseUrl: "{bedrock.url}",
     apiKey: "{BEDROCK_KEY}"}}
"""
    models = f"""
  - {{id: flash, provider: google, name: gemini-2.5-flash,
     capabilities: [chat, tools, vision, json_mode], price: {{input: 0.30, output: 2.50}}}}
  - {{id: nova, provider: aws, name: "{NOVA}", capabilities: [chat, tools],
     price: {{input: 0.06, output: 0.24}}}}"""
    configurations = """
  - {id: cheapest, mode: criteria,
     criteria: {capabilities: [chat, tools], adapterTypes: [openai, gemini, bedrock],
                preferLowestCost: true}}
  - {id: no-aws, mode: criteria,
     criteria: {capabilities: [chat, tools], adapterTypes: [openai, gemini],
                preferLowestCost: true}}
  - {id: json-routed, mode: criteria,
     criteria: {capabilities: [chat, json_mode], adapterTypes: [openai, gemini, bedrock]}}"""
    yaml_text = gateway_yaml(
        upstream.url,
        f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}",
        providers=providers,
        models=models,
        configurations=configurations,
    )
    with running_gateway(yaml_text) as running:
        yield running


def test_criteria_choose_among_openai_gemini_and_bedrock_models(
    gateway: RunningGateway, upstream: FakeUpstream, gemini: FakeGemini, bedrock: FakeBedrock
) -> None:
    upstream.behave("small-model", content="From the OpenAI-compatible one.")
    gemini.script("gemini-2.5-flash", Turn(parts=[{"text": "{}"}]))
    bedrock.script(NOVA, Answer(text="From Nova."))
    client = gateway.client()
    cheapest = client.chat.completions.with_raw_response.create(model="cheapest", messages=MESSAGES)
    assert cheapest.headers["x-gateway-provider"] == "aws"  # 0.06 input beats 0.15 and 0.30
    assert cheapest.parse().choices[0].message.content == "From Nova."
    no_aws = client.chat.completions.with_raw_response.create(model="no-aws", messages=MESSAGES)
    assert no_aws.headers["x-gateway-provider"] == "fake"  # 0.15 beats 0.30
    json_mode = client.chat.completions.with_raw_response.create(
        model="json-routed", messages=MESSAGES, response_format={"type": "json_object"}
    )
    assert json_mode.headers["x-gateway-provider"] == "google"  # only flash has json_mode
    rows = gateway.rows(expect=3)
    assert [(r["configuration"], r["adapter_type"]) for r in rows] == [
        ("cheapest", "bedrock"),
        ("no-aws", "openai"),
        ("json-routed", "gemini"),
    ]
    assert all(r["success"] for r in rows)
    assert bedrock.refused == []
