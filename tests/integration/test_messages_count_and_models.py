"""The Messages API's companions: count_tokens (native to Anthropic, else the gateway's
estimate, marked), GET /v1/models in Anthropic's shape, the HEAD / probe."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx
import pytest

from tests.integration.messages_support import client, gateway, lower, sent
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import OTHER_KEY, TEST_KEY, RunningGateway

__all__ = ["gateway"]

HELLO: list[Any] = [{"role": "user", "content": "Say hello."}]


def test_count_tokens_is_native_when_the_configuration_resolves_to_anthropic(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("claude-haiku", prompt_tokens=321)
    raw = client(gateway).messages.with_raw_response.count_tokens(
        model="claude-chat",
        system="Be brief.",
        messages=HELLO,
        extra_headers={"anthropic-beta": "token-counting-2024-11-01"},
    )
    assert raw.parse().input_tokens == 321
    assert raw.headers["x-gateway-token-count"] == "provider"
    assert raw.headers["x-gateway-model"] == "haiku"
    upstream_call = sent(upstream, "/anthropic/v1/messages/count_tokens")
    assert upstream_call.body == {"model": "claude-haiku", "system": "Be brief.", "messages": HELLO}
    headers = lower(upstream_call.headers)
    assert headers["x-api-key"] == "sk-ant-test"
    assert headers["anthropic-beta"] == "token-counting-2024-11-01"
    assert gateway.rows() == []  # no call: no row


def test_count_tokens_is_the_gateways_estimate_for_other_providers(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    sdk = client(gateway)
    short = sdk.messages.with_raw_response.count_tokens(model="chat", messages=HELLO)
    assert short.headers["x-gateway-token-count"] == "estimate"
    longer = sdk.messages.count_tokens(
        model="chat", system="Be brief and polite, always.", messages=HELLO
    )
    assert 0 < short.parse().input_tokens < longer.input_tokens
    assert upstream.received == []


def test_count_tokens_refuses_as_a_call_would(gateway: RunningGateway) -> None:
    with pytest.raises(anthropic.NotFoundError):
        client(gateway).messages.count_tokens(model="no-such", messages=HELLO)
    with pytest.raises(anthropic.PermissionDeniedError):
        client(gateway, key=OTHER_KEY).messages.count_tokens(model="claude-chat", messages=HELLO)
    with pytest.raises(anthropic.AuthenticationError):
        client(gateway, key="sk-nope").messages.count_tokens(model="chat", messages=HELLO)


def test_models_list_in_anthropics_shape_with_anthropic_version(gateway: RunningGateway) -> None:
    listed = client(gateway).models.list()
    ids = [m.id for m in listed.data]
    assert ids[:2] == ["chat", "embed"] and "claude-chat" in ids
    assert listed.data[0].type == "model" and listed.data[0].display_name == "chat"
    restricted = client(gateway, key=OTHER_KEY).models.list()
    assert [m.id for m in restricted.data] == ["chat"]
    plain = httpx.get(
        f"{gateway.url}/v1/models", headers={"authorization": f"Bearer {TEST_KEY}"}
    ).json()
    assert plain["object"] == "list" and plain["data"][0]["object"] == "model"


def test_the_root_answers_claude_codes_head_probe(gateway: RunningGateway) -> None:
    assert httpx.head(f"{gateway.url}/").status_code == 200
    assert httpx.get(f"{gateway.url}/").json() == {"status": "ok"}


def test_the_query_beta_true_changes_nothing(gateway: RunningGateway) -> None:
    answer = httpx.post(
        f"{gateway.url}/v1/messages?beta=true",
        headers={"x-api-key": TEST_KEY, "anthropic-version": "2023-06-01"},
        json={"model": "claude-chat", "max_tokens": 10, "messages": HELLO},
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["type"] == "message"


def test_models_list_errors_are_anthropic_errors_with_anthropic_version(
    gateway: RunningGateway,
) -> None:
    with pytest.raises(anthropic.AuthenticationError) as refused:
        client(gateway, key="sk-nope").models.list()
    assert refused.value.status_code == 401
    body: Any = refused.value.body
    assert body["type"] == "error" and body["error"]["type"] == "authentication_error"
    assert body["error"]["message"] == "Missing or invalid API key."
    plain = httpx.get(f"{gateway.url}/v1/models", headers={"authorization": "Bearer sk-nope"})
    assert plain.status_code == 401 and "type" not in plain.json()
    assert plain.json()["error"]["message"] == "Missing or invalid API key."


def test_models_list_in_anthropics_shape_carries_the_request_id_its_errors_name(
    gateway: RunningGateway,
) -> None:
    headers = {"anthropic-version": "2023-06-01", "x-request-id": "models-7"}
    listed = httpx.get(f"{gateway.url}/v1/models", headers={**headers, "x-api-key": TEST_KEY})
    assert listed.status_code == 200 and listed.headers["x-request-id"] == "models-7"
    refused = httpx.get(f"{gateway.url}/v1/models", headers={**headers, "x-api-key": "sk-nope"})
    assert refused.status_code == 401 and refused.headers["x-request-id"] == "models-7"
    assert refused.json()["request_id"] == "models-7"  # Anthropic's envelope names it
    with pytest.raises(anthropic.AuthenticationError) as caught:
        client(gateway, key="sk-nope").models.list()
    made = caught.value.response.headers["x-request-id"]
    assert len(made) == 32 and caught.value.body["request_id"] == made  # type: ignore[index]
