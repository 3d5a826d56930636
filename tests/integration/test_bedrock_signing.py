"""The fake Bedrock verifies signatures: credentials it does not know are refused as AWS
refuses them, and the gateway reports the refusal as its own credentials' failure."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from tests.integration.bedrock_support import CLAUDE, MESSAGES, aws_environment, bedrock
from tests.support.fake_bedrock import REGION, FakeBedrock
from tests.support.gateway import gateway_yaml, running_gateway

__all__ = ["aws_environment", "bedrock"]


def test_a_wrong_secret_fails_the_signature_check_and_is_an_auth_failure(
    bedrock: FakeBedrock, aws_environment: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bedrock.reset()
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-test-secret")
    yaml_text = gateway_yaml(
        "http://127.0.0.1:9",
        f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}",
        providers=f"""
  - {{id: aws, adapter: bedrock, region: {REGION}, baseUrl: "{bedrock.url}", maxRetries: 0}}
""",
        models=f"""
  - {{id: claude, provider: aws, name: "{CLAUDE}", capabilities: [chat],
     price: {{input: 1, output: 1}}}}""",
        configurations="  - {id: claude-chat, mode: fixed, model: claude}",
    )
    with running_gateway(yaml_text) as gateway:
        with pytest.raises(openai.APIStatusError) as failed:
            gateway.client().chat.completions.create(model="claude-chat", messages=MESSAGES)
        assert failed.value.status_code == 502
        assert "not-the-test-secret" not in str(failed.value.body)
        (row,) = gateway.rows(expect=1)
        assert row["error_class"] == "upstream_auth"
    assert bedrock.refused == [
        "The request signature we calculated does not match the signature you provided"
    ]
