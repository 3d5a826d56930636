"""The pure parts of /v1/messages to Claude on Bedrock: which models, the body, the chunks."""

from __future__ import annotations

import base64
import json

from gateway.upstream.bedrock.native import chunk_event, native_body, natively_claude


def test_claude_models_inference_profiles_and_their_arns_are_claude() -> None:
    assert natively_claude("anthropic.claude-3-5-haiku-20241022-v1:0")
    assert natively_claude("us.anthropic.claude-sonnet-4-20250514-v1:0")
    assert natively_claude(
        "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-haiku"
    )
    assert not natively_claude("amazon.nova-lite-v1:0")
    assert not natively_claude("meta.llama3-70b-instruct-v1:0")


def test_the_body_loses_model_and_stream_and_gains_the_version_and_betas() -> None:
    body = {"model": "m", "stream": True, "max_tokens": 5, "messages": [], "anthropic_beta": ["x"]}
    headers = {"anthropic-beta": "a-1, b-2", "anthropic-version": "2023-06-01"}
    assert native_body(body, headers, None) == {
        "max_tokens": 5,
        "messages": [],
        "anthropic_version": "bedrock-2023-05-31",
        "anthropic_beta": ["a-1", "b-2"],
    }
    assert native_body({"max_tokens": 5}, {}, "bedrock-2099-01-01") == {
        "max_tokens": 5,
        "anthropic_version": "bedrock-2099-01-01",
    }


def test_a_chunk_is_its_anthropic_event_without_bedrock_metrics() -> None:
    event = {"type": "message_stop", "amazon-bedrock-invocationMetrics": {"inputTokenCount": 3}}
    raw = base64.b64encode(json.dumps(event).encode()).decode()
    assert chunk_event({"bytes": raw}) == {"type": "message_stop"}
    assert chunk_event({"bytes": "not base64!"}) is None
    assert chunk_event({"bytes": base64.b64encode(b"[1]").decode()}) is None
    assert chunk_event({}) is None
