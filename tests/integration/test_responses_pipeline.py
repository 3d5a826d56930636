"""POST /v1/responses through the rest of the pipeline, as for chat: fallbacks, retries,
the response cache, budgets and criteria mode's per-operation history."""

from __future__ import annotations

import httpx
import openai
import pytest

from tests.integration.responses_support import _events, gateway
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import RunningGateway

__all__ = ["gateway"]


def test_a_fallback_answers_when_the_native_provider_fails(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", fail_always=503)
    raw = gateway.client().responses.with_raw_response.create(model="rescued", input="Hi")
    assert raw.parse().output_text == "Hello from the fake upstream."
    assert raw.headers["x-gateway-provider"] == "compat"
    (row,) = gateway.rows(expect=1)
    assert row["fallback_attempts"] == 1 and row["served_model"] == "compat-model"


def test_a_failed_native_attempt_is_retried_on_the_same_provider(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", fail_statuses=[502])
    answer = gateway.client().responses.create(model="chat", input="Hi")
    assert answer.output_text == "Hello from the fake upstream."
    assert upstream.calls["small-model"] == 2
    (row,) = gateway.rows(expect=1)
    assert row["provider_retries"] == 1 and row["success"]


def test_whole_answers_are_cached(gateway: RunningGateway, upstream: FakeUpstream) -> None:
    client = gateway.client()
    first = client.responses.with_raw_response.create(model="cached", input="Same question")
    second = client.responses.with_raw_response.create(model="cached", input="Same question")
    assert second.headers["x-gateway-cache"] == "hit"
    assert second.parse().output_text == first.parse().output_text
    assert upstream.calls["compat-small"] == 1


def test_budgets_hold_the_max_output_tokens(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    client = gateway.client()
    with pytest.raises(openai.RateLimitError) as refused:
        client.responses.create(model="tight", input="Hi", max_output_tokens=5000)
    assert refused.value.code == "budget_exceeded"
    assert upstream.calls["compat-small"] == 0
    answer = client.responses.create(model="tight", input="Hi", max_output_tokens=100)
    assert answer.output_text


def test_criteria_mode_keeps_a_history_per_responses_operation(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    gateway.client().responses.create(model="routed", input="Hi")
    status, _ = _events(gateway, {"model": "routed", "input": "Hi"})
    assert status == 200
    rows = gateway.rows(expect=2)
    assert [r["operation"] for r in rows] == ["responses", "responses_stream"]
    assert all(r["routing_policy_mode"] for r in rows)
    explained = httpx.get(
        f"{gateway.url}/admin/routing/explain",
        params={"configuration": "routed", "operation": "responses_stream"},
        headers={"authorization": "Bearer sk-test-admin-5555555555"},
    )
    assert explained.status_code == 200, explained.text
