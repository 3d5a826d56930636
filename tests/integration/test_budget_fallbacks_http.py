"""A fallback configuration's own budget holds when the call reaches it, through the gateway."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.budget_support import (
    HTTP_BACKENDS,
    budget_yaml,
    chat_body,
    counter,
    database,
    holds,
    running,
)
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import TEST_KEY, RunningGateway

MODELS = """  - {id: big, provider: fake, name: big-model, capabilities: [chat, streaming],
     price: {input: 1.00, output: 2.00}}
  - {id: spare-model, provider: fake, name: spare-model, capabilities: [chat, streaming]}"""
CONFIGURATIONS = """  - {id: rescued, mode: fixed, model: small, fallback: [backup]}
  - {id: rescued-twice, mode: fixed, model: small, fallback: [backup, spare]}
  - {id: backup, mode: fixed, model: big, budget: {daily: {requests: 1}}}
  - {id: spare, mode: fixed, model: spare-model}"""


def _gateway(upstream: FakeUpstream, url: str) -> Any:
    return running(budget_yaml(upstream.url, url, models=MODELS, configurations=CONFIGURATIONS))


def _post(gateway: RunningGateway, configuration: str) -> httpx.Response:
    return httpx.post(
        f"{gateway.url}/v1/chat/completions",
        json=chat_body(configuration),
        headers={"authorization": f"Bearer {TEST_KEY}"},
        timeout=20,
    )


@pytest.mark.parametrize("backend", HTTP_BACKENDS)
def test_a_fallback_past_its_own_budget_is_not_attempted_and_its_refusal_is_the_answer(
    backend: str, upstream: FakeUpstream, tmp_path: Path
) -> None:
    upstream.behave("small-model", fail_always=500)
    with database(backend, tmp_path) as url, _gateway(upstream, url) as gateway:
        served = _post(gateway, "rescued")
        assert served.status_code == 200 and served.headers["x-gateway-model"] == "big"
        used = counter(gateway, "configuration", "backup")
        assert used is not None and (used["requests"], used["tokens"]) == (1, 12 + 7)

        refused = _post(gateway, "rescued")
        assert refused.status_code == 429
        error = refused.json()["error"]
        assert error["code"] == "budget_exceeded"
        assert "configuration 'backup' daily requests budget of 1 requests" in error["message"]
        assert "retry-after" in refused.headers
        assert upstream.calls["big-model"] == 1  # the refused fallback was never called
        assert upstream.calls["small-model"] == 2
        row = gateway.rows(expect=2)[-1]
        assert (row["http_status"], row["error_class"]) == (429, "budget_exceeded")
        assert (row["provider"], row["served_model"], row["fallback_attempts"]) == (
            "fake",
            None,
            0,
        )
        used = counter(gateway, "configuration", "backup")
        assert used is not None and used["requests"] == 1  # the refusal held nothing
        assert holds(gateway) == 0


@pytest.mark.parametrize("backend", HTTP_BACKENDS)
def test_a_fallback_that_did_not_serve_releases_its_hold(
    backend: str, upstream: FakeUpstream, tmp_path: Path
) -> None:
    upstream.behave("small-model", fail_always=500)
    upstream.behave("big-model", fail_always=500)
    with database(backend, tmp_path) as url, _gateway(upstream, url) as gateway:
        assert _post(gateway, "rescued").status_code == 502
        used = counter(gateway, "configuration", "backup")
        assert used is not None and (used["requests"], used["tokens"]) == (0, 0)
        assert holds(gateway) == 0
        upstream.behave("big-model")
        assert _post(gateway, "rescued").status_code == 200  # the released hold left room


def test_a_later_fallback_serves_when_an_earlier_ones_budget_refuses(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    upstream.behave("small-model", fail_always=500)
    with _gateway(upstream, sqlite_url) as gateway:
        assert _post(gateway, "rescued").headers["x-gateway-model"] == "big"
        answer = _post(gateway, "rescued-twice")
        assert answer.status_code == 200 and answer.headers["x-gateway-model"] == "spare-model"
        assert upstream.calls["big-model"] == 1
        row = gateway.rows(expect=2)[-1]
        assert (row["served_configuration"], row["fallback_attempts"]) == ("spare", 1)
        used = counter(gateway, "configuration", "backup")
        assert used is not None and used["requests"] == 1  # spare served: backup not charged


def test_a_primary_that_serves_never_touches_the_fallbacks_budget(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    with _gateway(upstream, sqlite_url) as gateway:
        for _ in range(3):
            assert _post(gateway, "rescued").headers["x-gateway-model"] == "small"
        assert counter(gateway, "configuration", "backup") is None


@pytest.mark.parametrize("backend", HTTP_BACKENDS)
def test_a_fallback_is_charged_only_when_it_is_what_served(
    backend: str, upstream: FakeUpstream, tmp_path: Path
) -> None:
    upstream.behave("small-model", fail_always=500)
    upstream.behave("big-model", fail_always=500)
    with database(backend, tmp_path) as url, _gateway(upstream, url) as gateway:
        answer = _post(gateway, "rescued-twice")
        assert answer.status_code == 200 and answer.headers["x-gateway-model"] == "spare-model"
        assert upstream.calls["big-model"] == 1  # held and tried, then failed
        used = counter(gateway, "configuration", "backup")
        assert used is not None and (used["requests"], used["tokens"]) == (0, 0)
        assert holds(gateway) == 0
