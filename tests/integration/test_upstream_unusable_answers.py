"""Upstream answers the gateway does not pass on: a refused provider key becomes its own
502 upstream_auth_failed, a redirect (never followed) or an error body on a 200 an
unusable answer; each is a provider failure that falls back and counts toward the
circuit."""

from __future__ import annotations

import json

import openai
import pytest

from tests.integration.upstream_errors_support import (
    ECHO,
    MESSAGES,
    PROVIDER_KEY,
    _assert_no_key,
    _post,
    gateway,
)
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import RunningGateway

__all__ = ["gateway"]


# --- the provider refusing the gateway's credentials -------------------------------------------


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_provider_key_is_a_502_upstream_auth_failed_not_the_upstream_body(
    gateway: RunningGateway, upstream: FakeUpstream, status: int
) -> None:
    upstream.behave("small-model", fail_always=status, error_body=ECHO)
    with pytest.raises(openai.InternalServerError) as caught:
        gateway.client().chat.completions.create(model="chat", messages=MESSAGES)
    assert caught.value.status_code == 502
    body = caught.value.body
    assert isinstance(body, dict)
    assert (body["type"], body["code"]) == ("api_error", "upstream_auth_failed")
    assert "provider 'fake' rejected the gateway's credentials" in body["message"]
    assert "your API key is fine" in body["message"]
    assert "Bad request" not in caught.value.response.text  # the upstream's body stays home
    assert upstream.calls["small-model"] == 1  # maxRetries 2, but a retry cannot mend it
    (row,) = gateway.rows()
    assert row["error_class"] == "upstream_auth" and row["http_status"] == 502


def test_a_refused_provider_key_falls_back_and_opens_the_circuit(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", fail_always=401)
    for _ in range(3):  # failureThreshold 2: the third call skips the refusing provider
        raw = gateway.client().chat.completions.with_raw_response.create(
            model="rescued", messages=MESSAGES
        )
        assert raw.headers["x-gateway-model"] == "backup"
    assert upstream.calls["small-model"] == 2
    rows = gateway.rows(expect=3)
    assert [(r["success"], r["served_model"]) for r in rows] == [(1, "backup")] * 3
    assert [r["fallback_attempts"] for r in rows] == [1, 1, 1]


# --- redirects ----------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 307, 308])
def test_a_redirect_is_never_followed_and_fails_like_an_unusable_answer(
    gateway: RunningGateway, upstream: FakeUpstream, status: int
) -> None:
    # Followed, the redirect would land on a route that answers.
    target = f"{upstream.url}/openai/deployments/backup-model/chat/completions"
    upstream.behave(
        "small-model",
        fail_always=status,
        retry_after="0",
        error_raw=b"<a href='elsewhere'>moved</a>",
        error_headers={"location": target, "content-type": "text/html"},
    )
    response = _post(gateway)
    assert response.status_code == 502
    error = response.json()["error"]
    assert error["code"] == "upstream_error" and "fake/small: invalid_response" in error["message"]
    # Retried like an unusable 2xx until the circuit (threshold 2) opened; never followed.
    assert upstream.calls == {"small-model": 2}
    (row,) = gateway.rows()
    assert row["error_class"] == "invalid_upstream_response" and row["http_status"] == 502
    raw = gateway.client().chat.completions.with_raw_response.create(
        model="rescued", messages=MESSAGES
    )
    assert raw.headers["x-gateway-model"] == "backup"


def test_an_error_body_on_a_200_is_an_unusable_answer_not_a_success(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave(
        "small-model",
        raw_answer=json.dumps({"error": {"message": f"boom {PROVIDER_KEY}"}}).encode(),
    )
    response = _post(gateway)
    assert response.status_code == 502 and response.json()["error"]["code"] == "upstream_error"
    _assert_no_key(response.text)
    (row,) = gateway.rows()
    assert row["success"] == 0 and row["error_class"] == "invalid_upstream_response"
    raw = gateway.client().chat.completions.with_raw_response.create(
        model="rescued", messages=MESSAGES
    )
    assert raw.headers["x-gateway-model"] == "backup"
