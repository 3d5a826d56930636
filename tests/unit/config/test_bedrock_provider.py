"""adapter: bedrock in the configuration: its region, its default endpoint, and the
extra it needs."""

from __future__ import annotations

import pytest

from gateway.config import providers
from gateway.domain.model import AdapterType

from .support import load, problems_of

BEDROCK = """
providers:
  - {id: aws, adapter: bedrock, region: eu-west-3}
models:
  - {id: claude, provider: aws, name: anthropic.claude-3-5-haiku-20241022-v1:0,
     price: {input: 1, output: 5}}
"""


def test_the_base_url_defaults_to_the_regions_runtime_endpoint() -> None:
    provider = load(BEDROCK).providers["aws"]
    assert provider.adapter is AdapterType.BEDROCK
    assert provider.region == "eu-west-3"
    assert provider.base_url == "https://bedrock-runtime.eu-west-3.amazonaws.com"
    assert provider.responses_api is False


def test_a_base_url_overrides_it_and_a_region_is_required() -> None:
    custom = BEDROCK.replace(
        "region: eu-west-3", 'region: us-east-1, baseUrl: "http://127.0.0.1:9"'
    )
    assert load(custom).providers["aws"].base_url == "http://127.0.0.1:9"
    assert problems_of(BEDROCK.replace(", region: eu-west-3", "")) == [
        "providers[0].region: required for adapter 'bedrock' (e.g. us-east-1)"
    ]


def test_a_region_on_another_adapter_is_a_problem() -> None:
    text = BEDROCK.replace("adapter: bedrock, region: eu-west-3", "adapter: echo, region: x")
    assert problems_of(text) == ["providers[0].region: only adapter 'bedrock' takes a region"]


def test_without_botocore_the_check_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(providers, "find_spec", lambda name: None)
    (problem,) = problems_of(BEDROCK)
    assert problem.startswith("providers[0].adapter: adapter 'bedrock' needs botocore")
    assert "pip install 'llm-gateway[bedrock]'" in problem
