"""A fallback's own ``configurations[].rateLimit`` holds for the calls it serves as a
fallback, as for the calls that name it (docs/operations.md, "Rate limits"): counted
together, requests, tokens and concurrent slots alike, in process and in Redis; a
fallback at its limit is skipped like a failed one (the next fallback), and a call that
attempted nothing gets 429 naming the limit that frees first."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis

from tests.integration.budget_support import budget_yaml, burst, chat_body, running, statuses
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import TEST_KEY, RunningGateway
from tests.support.tcp_proxy import TcpProxy

KEY = {"authorization": f"Bearer {TEST_KEY}"}
REDIS = os.environ.get("GATEWAY_TEST_REDIS_URL")
STORES = [
    pytest.param("local", id="in-process"),
    pytest.param(
        "redis",
        id="redis",
        marks=pytest.mark.skipif(not REDIS, reason="GATEWAY_TEST_REDIS_URL is not set"),
    ),
]
MODELS = """
  - {id: broken, provider: fake, name: broken-model, capabilities: [chat, streaming]}
  - {id: spare, provider: fake, name: spare-model, capabilities: [chat, streaming]}
  - {id: quota, provider: fake, name: quota-model, capabilities: [chat, streaming],
     rateLimit: {requestsPerMinute: 1}}"""
# ``front`` always fails (its model answers 503), so each call to it reaches its
# fallbacks: first the limited configuration, then ``spare-only``, which has no limit.
CONFIGURATIONS = """
  - {id: front, mode: fixed, model: broken, fallback: [limited, spare-only]}
  - {id: limited, mode: fixed, model: small, rateLimit: {requestsPerMinute: 3}}
  - {id: tokens-front, mode: fixed, model: broken, fallback: [tokens, spare-only]}
  - {id: tokens, mode: fixed, model: small, rateLimit: {tokensPerMinute: 1000}}
  - {id: slot-front, mode: fixed, model: broken, fallback: [slot, spare-only]}
  - {id: slot, mode: fixed, model: small, rateLimit: {concurrent: 1}}
  - {id: last-front, mode: fixed, model: broken, fallback: [limited]}
  - {id: capped, mode: fixed, model: quota, fallback: [slot]}
  - {id: spare-only, mode: fixed, model: spare}"""


@pytest.fixture
def store(request: pytest.FixtureRequest) -> Iterator[str]:
    """``local``, or ``redis`` with this test's limits cleared before and after."""
    name: str = request.param
    if name == "redis":
        assert REDIS is not None
        _clear(REDIS)
        yield name
        _clear(REDIS)
    else:
        yield name


def _clear(url: str) -> None:
    client = redis.Redis.from_url(url)
    try:
        keys = list(client.scan_iter(match="gateway:rl:*"))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


def _yaml(upstream: FakeUpstream, sqlite_url: str, store: str) -> str:
    upstream.behave("broken-model", fail_always=503)
    extra = f'redis: {{url: "{REDIS}"}}' if store == "redis" else ""
    return budget_yaml(
        upstream.url, sqlite_url, models=MODELS, configurations=CONFIGURATIONS, extra=extra
    )


def _post(gateway: RunningGateway, configuration: str, **body: Any) -> httpx.Response:
    return httpx.post(
        f"{gateway.url}/v1/chat/completions",
        json=chat_body(configuration, **body),
        headers=KEY,
        timeout=30,
    )


def _served(answers: list[httpx.Response]) -> dict[str, int]:
    counted: dict[str, int] = {}
    for answer in answers:
        name = answer.headers.get("x-gateway-configuration", "?")
        counted[name] = counted.get(name, 0) + 1
    return counted


@pytest.mark.parametrize("store", STORES, indirect=True)
def test_a_fallbacks_requests_limit_counts_its_direct_and_fallback_calls_together(
    upstream: FakeUpstream, sqlite_url: str, store: str
) -> None:
    with running(_yaml(upstream, sqlite_url, store)) as gateway:
        direct = _post(gateway, "limited")
        assert direct.status_code == 200
        assert direct.headers["x-ratelimit-remaining-requests"] == "2"
        reached = [_post(gateway, "front") for _ in range(2)]
        assert [a.status_code for a in reached] == [200, 200]
        assert {a.headers["x-gateway-configuration"] for a in reached} == {"limited"}
        # The fallback's limit is the answer's: counted there, with the direct call.
        assert reached[0].headers["x-ratelimit-limit-requests"] == "3"
        assert [a.headers["x-ratelimit-remaining-requests"] for a in reached] == ["1", "0"]
        # At its limit: skipped like a failed fallback, the next one serves.
        skipped = _post(gateway, "front")
        assert skipped.status_code == 200
        assert skipped.headers["x-gateway-configuration"] == "spare-only"
        assert "x-ratelimit-limit-requests" not in skipped.headers  # nothing counted it
        # No next fallback: the call's own error (its primary's failure), not a 429.
        last = _post(gateway, "last-front")
        assert last.status_code == 502, last.text
        assert last.json()["error"]["code"] == "upstream_error"
        # And the calls that name it are refused as before: the limit is one.
        refused = _post(gateway, "limited")
        assert refused.status_code == 429
        assert "configuration 'limited' 3 requests per minute" in refused.json()["error"]["message"]
        assert upstream.calls["small-model"] == 3
        assert upstream.calls["spare-model"] == 1
        rows = gateway.rows(expect=6)
    trail = json.loads(rows[3]["routing_detail"])["attempts"]
    assert [(a["configuration"], a["outcome"]) for a in trail] == [
        ("front", "http_5xx"),
        ("limited", "rate_limit_exceeded"),
        ("spare-only", "served"),
    ]
    assert rows[3]["served_configuration"] == "spare-only" and rows[3]["success"]
    assert rows[3]["fallback_attempts"] == 1  # only the one sent the call
    assert [
        (a["configuration"], a["outcome"])
        for a in json.loads(rows[4]["routing_detail"])["attempts"]
    ] == [("last-front", "http_5xx"), ("limited", "rate_limit_exceeded")]


@pytest.mark.parametrize("store", STORES, indirect=True)
def test_a_fallbacks_concurrent_slot_is_held_while_it_serves_and_freed_after(
    upstream: FakeUpstream, sqlite_url: str, store: str
) -> None:
    upstream.behave("small-model", latency_ms=500)
    with running(_yaml(upstream, sqlite_url, store)) as gateway:
        answers = burst([gateway.url], [chat_body("slot-front")] * 4)
        assert statuses(answers) == {200: 4}
        assert _served(answers) == {"slot": 1, "spare-only": 3}
        assert _post(gateway, "slot-front").headers["x-gateway-configuration"] == "slot"  # freed
        # A stream served by the fallback holds its slot until it ends.
        upstream.behave("small-model", chunk_delay_ms=150)
        with httpx.Client(timeout=10, headers=KEY) as client:
            url = f"{gateway.url}/v1/chat/completions"
            body = chat_body("slot-front", stream=True)
            with client.stream("POST", url, json=body) as stream:
                assert stream.headers["x-gateway-configuration"] == "slot"
                meanwhile = client.post(url, json=chat_body("slot-front"))
                assert meanwhile.headers["x-gateway-configuration"] == "spare-only"
                direct = client.post(url, json=chat_body("slot"))
                assert direct.status_code == 429  # the direct call shares the slot
                for _ in stream.iter_bytes():
                    pass
            after = client.post(url, json=chat_body("slot-front"))
            assert after.headers["x-gateway-configuration"] == "slot"


@pytest.mark.parametrize("store", STORES, indirect=True)
def test_a_fallbacks_tokens_are_held_on_its_model_then_settled_to_what_it_used(
    upstream: FakeUpstream, sqlite_url: str, store: str
) -> None:
    # Each call holds its prompt (about 10 tokens) + max_tokens 400; it uses 12 + 7.
    upstream.behave("small-model", latency_ms=400)
    with running(_yaml(upstream, sqlite_url, store)) as gateway:
        body = chat_body("tokens-front", max_tokens=400)
        answers = burst([gateway.url], [body] * 3)
        assert _served(answers) == {"tokens": 2, "spare-only": 1}  # 2 holds fit in 1000
        held = [a for a in answers if a.headers["x-gateway-configuration"] == "tokens"]
        remaining = sorted(int(a.headers["x-ratelimit-remaining-tokens"]) for a in held)
        assert remaining[0] <= 1000 - 2 * 400  # both holds counted
        # Settled to 19 each: two more holds fit now (held as they were, none would).
        later = burst([gateway.url], [body] * 2)
        assert _served(later) == {"tokens": 2}
        assert max(int(a.headers["x-ratelimit-remaining-tokens"]) for a in later) <= (
            1000 - 2 * 19 - 400
        )


@pytest.mark.parametrize("store", STORES, indirect=True)
def test_a_call_that_attempted_nothing_gets_429_naming_the_limit_that_frees_first(
    upstream: FakeUpstream, sqlite_url: str, store: str
) -> None:
    with running(_yaml(upstream, sqlite_url, store)) as gateway:
        assert _post(gateway, "capped").headers["x-gateway-model"] == "quota"  # its 1 a minute
        upstream.behave("small-model", chunk_delay_ms=150)
        with httpx.Client(timeout=10, headers=KEY) as client:
            url = f"{gateway.url}/v1/chat/completions"
            body = chat_body("slot", stream=True)
            with client.stream("POST", url, json=body) as stream:  # holds the slot
                assert stream.status_code == 200
                # The model is at its quota (free in about a minute), the fallback at
                # its one slot (look again in a second): the answer names the fallback's.
                refused = client.post(url, json=chat_body("capped"))
                assert refused.status_code == 429, refused.text
                error = refused.json()["error"]
                assert error["code"] == "rate_limit_exceeded"
                assert "configuration 'slot' 1 concurrent calls" in error["message"]
                assert refused.headers["retry-after"] == "1"
                for _ in stream.iter_bytes():
                    pass
            served = client.post(url, json=chat_body("capped"))
            assert served.status_code == 200
            assert served.headers["x-gateway-configuration"] == "slot"
        assert upstream.calls["quota-model"] == 1
        rows = gateway.rows(expect=4)
    refused_row = next(r for r in rows if r["http_status"] == 429)
    assert refused_row["error_class"] == "rate_limit_exceeded"
    assert refused_row["provider"] is None  # nothing was sent the call
    trail = json.loads(refused_row["routing_detail"])["attempts"]
    assert [(a["configuration"], a["outcome"]) for a in trail] == [
        ("capped", "rate_limit_exceeded"),
        ("slot", "rate_limit_exceeded"),
    ]


@pytest.mark.skipif(not REDIS, reason="GATEWAY_TEST_REDIS_URL is not set")
def test_a_fallback_reached_while_redis_is_away_under_refuse_ends_the_call_with_503(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    assert REDIS is not None
    _clear(REDIS)
    proxy, through_proxy = TcpProxy.for_url(REDIS)
    try:
        yaml = _yaml(upstream, sqlite_url, "redis").replace(REDIS, through_proxy)
        yaml += "\nrateLimits: {onRedisOutage: refuse}\n"
        with running(yaml) as gateway:
            assert _post(gateway, "front").headers["x-gateway-configuration"] == "limited"
            proxy.down()
            away = _post(gateway, "front")
            assert away.status_code == 503, away.text
            assert away.json()["error"]["code"] == "rate_limit_unavailable"
            assert _post(gateway, "spare-only").status_code == 200  # no limit: unaffected
            assert upstream.calls["spare-model"] == 1  # the next fallback was not tried
    finally:
        proxy.close()
        _clear(REDIS)
