"""A fixed-mode configuration refuses an operation its model does not declare, as criteria
mode does (400 no_eligible_model naming the capability), unless it opts out with
``operationCapabilityEnforcement: observe``; a model that declares nothing passes."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import httpx
import openai
import pytest

from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import RunningGateway
from tests.support.routed import MESSAGES, routed_yaml

MODELS = """
  - {id: chatty, provider: p-a, name: model-chatty, capabilities: [chat]}
  - {id: embedder, provider: p-a, name: model-embedder, capabilities: [embeddings]}
  - {id: anything, provider: p-a, name: model-anything}
"""
CONFIGURATIONS = """
  - {id: chat-only, mode: fixed, model: chatty}
  - {id: chat-observed, mode: fixed, model: chatty, operationCapabilityEnforcement: observe}
  - {id: chat-then-embed, mode: fixed, model: chatty, fallback: [embed]}
  - {id: embed, mode: fixed, model: embedder}
  - {id: undeclared, mode: fixed, model: anything}
  - {id: embed-then-observed, mode: fixed, model: chatty, fallback: [chat-observed]}
  - {id: pool-observed, mode: criteria, operationCapabilityEnforcement: observe}
"""


@pytest.fixture
def gateway(upstream: FakeUpstream, sqlite_url: str) -> Iterator[RunningGateway]:
    yaml = routed_yaml(
        upstream.url,
        sqlite_url,
        models=MODELS,
        configurations=CONFIGURATIONS,
        providers=["p-a"],
    )
    running = RunningGateway(yaml)
    yield running
    running.stop()


def test_embeddings_on_a_chat_only_fixed_model_are_400_naming_the_capability(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        gateway.client().embeddings.create(model="chat-only", input="hello")
    error = caught.value.body
    assert isinstance(error, dict) and error["code"] == "no_eligible_model"
    assert caught.value.response.json()["error"]["type"] == "invalid_request_error"
    assert "chat-only" in error["message"] and "embeddings" in error["message"]
    assert upstream.received == []
    (row,) = gateway.rows()
    assert (row["http_status"], row["error_class"]) == (400, "no_eligible_model")
    assert row["provider"] is None  # nothing was attempted


def test_a_refused_fixed_configuration_goes_to_its_fallback(gateway: RunningGateway) -> None:
    raw = gateway.client().embeddings.with_raw_response.create(
        model="chat-then-embed", input="hello"
    )
    assert raw.headers["x-gateway-model"] == "embedder"
    (row,) = gateway.rows()
    assert row["success"] == 1 and row["fallback_attempts"] == 1
    assert row["served_configuration"] == "embed"


def test_observe_sends_the_call_anyway_with_a_warning_and_a_metric(
    gateway: RunningGateway, upstream: FakeUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="gateway"):
        raw = gateway.client().embeddings.with_raw_response.create(
            model="chat-observed", input="hi"
        )
    assert raw.headers["x-gateway-model"] == "chatty"
    assert upstream.calls["model-chatty"] == 1
    (line,) = [r.getMessage() for r in caplog.records if "observe" in r.getMessage()]
    assert "chat-observed" in line and "OPERATION_CAPABILITY_MISSING: embeddings" in line
    metrics = httpx.get(f"{gateway.url}/metrics").text
    assert 'gateway_routing_capability_warnings_total{configuration="chat-observed"} 1.0' in metrics


def _warnings_metric(gateway: RunningGateway, configuration: str) -> float:
    metrics = httpx.get(f"{gateway.url}/metrics").text
    name = f'gateway_routing_capability_warnings_total{{configuration="{configuration}"}}'
    values = [line.split()[-1] for line in metrics.splitlines() if line.startswith(name)]
    return float(values[0]) if values else 0.0


def test_an_observed_fallback_counts_its_warning(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    """The primary is refused (enforced); the observed fallback is sent anyway and counted."""
    raw = gateway.client().embeddings.with_raw_response.create(
        model="embed-then-observed", input="hi"
    )
    assert raw.headers["x-gateway-configuration"] == "chat-observed"
    assert upstream.calls["model-chatty"] == 1
    assert _warnings_metric(gateway, "chat-observed") == 1.0
    assert _warnings_metric(gateway, "embed-then-observed") == 0.0


def test_an_observed_criteria_configuration_counts_each_warned_call(
    gateway: RunningGateway,
) -> None:
    for _ in range(2):  # the second decision comes from the memo: it warns all the same
        raw = gateway.client().embeddings.with_raw_response.create(
            model="pool-observed", input="hi"
        )
        assert raw.headers["x-gateway-model"] == "chatty"  # first in the YAML, lacks it
    assert _warnings_metric(gateway, "pool-observed") == 2.0


def test_a_model_that_declares_nothing_passes(gateway: RunningGateway) -> None:
    raw = gateway.client().embeddings.with_raw_response.create(model="undeclared", input="hi")
    assert raw.headers["x-gateway-model"] == "anything"


def test_a_declared_operation_is_served(gateway: RunningGateway) -> None:
    answer = gateway.client().chat.completions.create(model="chat-only", messages=MESSAGES)
    assert answer.choices[0].message.content
