"""Budgets end to end: the real gateway under bursts, refusals, releases and sweeps."""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import openai
import pytest

from gateway.budgets import DatabaseBudgets
from gateway.budgets.figures import ONE_REQUEST
from gateway.budgets.windows import budget_lines
from gateway.domain.model import Endpoint
from gateway.usage.prompt import count_request_tokens
from gateway.usage.tokens import make_default_counter
from tests.integration.budget_support import (
    HTTP_BACKENDS,
    MESSAGES,
    budget_yaml,
    burst,
    chat_body,
    counter,
    database,
    holds,
    running,
    statuses,
)
from tests.support.fake_upstream import FakeUpstream


@pytest.mark.parametrize("backend", HTTP_BACKENDS)
def test_120_simultaneous_calls_against_a_daily_budget_of_50_requests_admit_exactly_50(
    backend: str, upstream: FakeUpstream, tmp_path: Path
) -> None:
    upstream.behave("small-model", latency_ms=300)  # every call is in flight at once
    alice = "budget: {daily: {requests: 50}}"
    with (
        database(backend, tmp_path) as url,
        running(budget_yaml(upstream.url, url, alice=alice)) as gateway,
    ):
        answers = burst([gateway.url], [chat_body()] * 120)
        assert statuses(answers) == {200: 50, 429: 70}
        assert upstream.calls["small-model"] == 50
        refused = [row for row in gateway.rows() if row["http_status"] == 429]
        assert len(refused) == 70
        assert {row["error_class"] for row in refused} == {"budget_exceeded"}
        assert {row["provider"] for row in refused} == {None}
        assert counter(gateway, "key", "alice")["requests"] == 50  # type: ignore[index]
        assert holds(gateway) == 0  # every admitted call settled


def test_a_refusal_names_the_budget_and_when_it_resets_with_retry_after(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    yaml = budget_yaml(upstream.url, sqlite_url, alice="budget: {daily: {requests: 1}}")
    with running(yaml) as gateway:
        client = gateway.client()
        client.chat.completions.create(model="chat", messages=MESSAGES)
        with pytest.raises(openai.RateLimitError) as caught:
            client.chat.completions.create(model="chat", messages=MESSAGES)
    now = datetime.now(UTC)
    midnight = datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), UTC)
    body = caught.value.body
    assert isinstance(body, dict) and body["code"] == "budget_exceeded"
    assert body["type"] == "rate_limit_error"
    assert "key 'alice' daily requests budget of 1 requests" in body["message"]
    assert f"resets at {midnight:%Y-%m-%dT%H:%M:%SZ}" in body["message"]
    retry_after = int(caught.value.response.headers["retry-after"])
    assert abs(retry_after - math.ceil((midnight - now).total_seconds())) <= 5


def test_a_configuration_budget_on_tokens_refuses_a_call_whose_worst_case_does_not_fit(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    configurations = "  - {id: tight, mode: fixed, model: small, budget: {monthly: {tokens: 600}}}"
    yaml = budget_yaml(upstream.url, sqlite_url, configurations=configurations)
    with running(yaml) as gateway:
        client = gateway.client()
        client.chat.completions.create(model="tight", messages=MESSAGES, max_tokens=500)
        # Settled at the actual 12 + 7 tokens, not the 500-token worst case.
        assert counter(gateway, "configuration", "tight", "month")["tokens"] == 19  # type: ignore[index]
        prompt = count_request_tokens(
            make_default_counter(), chat_body(), Endpoint.CHAT, "small-model"
        )
        fits = 600 - 19 - prompt
        with pytest.raises(openai.RateLimitError) as caught:
            client.chat.completions.create(model="tight", messages=MESSAGES, max_tokens=fits + 1)
        client.chat.completions.create(model="tight", messages=MESSAGES, max_tokens=fits)
        assert upstream.calls["small-model"] == 2
    body = caught.value.body
    assert isinstance(body, dict)
    assert "configuration 'tight' monthly tokens budget of 600 tokens" in body["message"]


def test_a_cost_budget_under_a_burst_is_never_exceeded_by_more_than_one_calls_cost(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    limit = Decimal("0.006")
    body = chat_body("metered", max_tokens=1000)
    prompt = count_request_tokens(make_default_counter(), body, Endpoint.CHAT, "small-model")
    # The provider counts a few more prompt tokens than the estimate held: actuals run over.
    upstream.behave("small-model", latency_ms=200, prompt_tokens=prompt + 5, completion_tokens=1000)
    held = (prompt * Decimal("0.15") + 1000 * Decimal("0.60")) / 1_000_000
    one_call = ((prompt + 5) * Decimal("0.15") + 1000 * Decimal("0.60")) / 1_000_000
    configurations = "  - {id: metered, mode: fixed, model: small, budget: {daily: {cost: 0.006}}}"
    with running(budget_yaml(upstream.url, sqlite_url, configurations=configurations)) as gw:
        answers = burst([gw.url], [body] * 40)
        admitted = statuses(answers).get(200, 0)
        assert admitted == int(limit / held)  # holds fill the budget, nothing is wasted
        spent = sum((row["actual_cost"] for row in gw.rows() if row["success"]), Decimal(0))
        assert spent == admitted * one_call
        assert spent <= limit + one_call
        settled = counter(gw, "configuration", "metered")["cost"]  # type: ignore[index]
        assert abs(Decimal(str(settled)) - spent) < Decimal("1e-9")


def test_calls_nothing_answered_release_their_hold(upstream: FakeUpstream, sqlite_url: str) -> None:
    yaml = budget_yaml(upstream.url, sqlite_url, alice="budget: {daily: {requests: 3}}")
    with running(yaml) as gateway:
        client = gateway.client()
        upstream.behave("small-model", fail_always=500)
        for _ in range(5):
            with pytest.raises(openai.InternalServerError):
                client.chat.completions.create(model="chat", messages=MESSAGES)
        upstream.behave("small-model")
        for _ in range(3):
            client.chat.completions.create(model="chat", messages=MESSAGES)
        with pytest.raises(openai.RateLimitError):
            client.chat.completions.create(model="chat", messages=MESSAGES)
        assert counter(gateway, "key", "alice")["requests"] == 3  # type: ignore[index]
        assert holds(gateway) == 0


def test_the_expired_hold_of_a_call_that_died_is_swept(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    yaml = budget_yaml(upstream.url, sqlite_url, alice="budget: {daily: {requests: 1}}")
    with running(yaml) as gateway:
        runtime = gateway.runtime
        alice = gateway.config.auth.keys[0]
        now = datetime.now(UTC)
        lines = list(budget_lines(alice, gateway.config.configurations["chat"], now))
        # A process that reserved the last request and crashed before settling.
        store = runtime.budgets.store
        gateway.server.run(store.reserve(lines, ONE_REQUEST, now - timedelta(seconds=1)))
        client = gateway.client()
        with pytest.raises(openai.RateLimitError):
            client.chat.completions.create(model="chat", messages=MESSAGES)
        sweeper = DatabaseBudgets(
            runtime.engine, runtime.counter, hold_seconds=60, sweep_interval_seconds=0.05
        )
        gateway.server.run(sweeper.start())
        try:
            deadline = time.monotonic() + 5
            while holds(gateway) and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            gateway.server.run(sweeper.stop())
        assert holds(gateway) == 0
        client.chat.completions.create(model="chat", messages=MESSAGES)  # admitted again
