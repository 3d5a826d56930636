"""The gateway with AWS Bedrock providers on a fake Bedrock Runtime: one signing with
SigV4 from the environment's (test) credentials, one with a Bedrock API key."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.fake_bedrock import (
    ACCESS_KEY,
    API_KEY,
    REGION,
    SECRET_KEY,
    SESSION_TOKEN,
    FakeBedrock,
)
from tests.support.gateway import RunningGateway, gateway_yaml, running_gateway

CLAUDE = "anthropic.claude-3-5-haiku-20241022-v1:0"
NOVA = "amazon.nova-lite-v1:0"
TITAN = "amazon.titan-embed-text-v2:0"
COHERE = "cohere.embed-english-v3"
MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Say hello."},
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a word up.",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
    }
]


@pytest.fixture(scope="module")
def bedrock() -> Iterator[FakeBedrock]:
    fake = FakeBedrock()
    yield fake
    fake.close()


@pytest.fixture(scope="module")
def aws_environment() -> Iterator[None]:
    """The test credentials, and nothing else of the machine's AWS setup."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        patch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
        patch.setenv("AWS_SESSION_TOKEN", SESSION_TOKEN)
        patch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
        patch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
        patch.setenv("AWS_EC2_METADATA_DISABLED", "true")
        patch.delenv("AWS_PROFILE", raising=False)
        yield


@pytest.fixture(scope="module")
def gateway(
    bedrock: FakeBedrock, aws_environment: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningGateway]:
    database = tmp_path_factory.mktemp("bedrock") / "gateway.db"
    providers = f"""
  - {{id: aws, adapter: bedrock, region: {REGION}, baseUrl: "{bedrock.url}",
     timeoutSeconds: 5, maxRetries: 1}}
  - {{id: aws-key, adapter: bedrock, region: {REGION}, baseUrl: "{bedrock.url}",
     apiKey: "{API_KEY}"}}
"""
    models = f"""
  - {{id: claude, provider: aws, name: "{CLAUDE}", capabilities: [chat, tools, vision, completion],
     maxOutputTokens: 2048,
     price: {{input: 0.80, output: 4.00, cacheRead: 0.08, cacheWrite: 1.00}}}}
  - {{id: nova, provider: aws-key, name: "{NOVA}", capabilities: [chat]}}
  - {{id: titan, provider: aws, name: "{TITAN}", capabilities: [embeddings],
     price: {{input: 0.02, output: 0}}}}
  - {{id: cohere, provider: aws, name: "{COHERE}", capabilities: [embeddings],
     price: {{input: 0.10, output: 0}}}}"""
    configurations = """
  - {id: claude-chat, mode: fixed, model: claude}
  - {id: nova-chat, mode: fixed, model: nova}
  - {id: titan-embed, mode: fixed, model: titan}
  - {id: cohere-embed, mode: fixed, model: cohere}"""
    yaml_text = gateway_yaml(
        "http://127.0.0.1:9",
        f"sqlite+aiosqlite:///{database}",
        providers=providers,
        models=models,
        configurations=configurations,
    )
    with running_gateway(yaml_text) as running:
        yield running


def new_rows(gateway: RunningGateway, before: int, expect: int = 1) -> list[dict[str, Any]]:
    """The rows recorded since there were ``before`` (waiting for ``expect`` of them)."""
    return gateway.rows(expect=before + expect)[before:]


@pytest.fixture(autouse=True)
def _fresh(request: pytest.FixtureRequest) -> None:
    if "bedrock" in request.fixturenames:
        request.getfixturevalue("bedrock").reset()
