"""The response cache end to end: hits answer without the upstream, unbilled, unhistoried."""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from sqlalchemy import text

from gateway.domain import Operation
from gateway.signals.history import read_call_history
from tests.integration.budget_support import (
    HTTP_BACKENDS,
    MESSAGES,
    budget_yaml,
    counter,
    database,
    query,
    running,
)
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import TEST_KEY, RunningGateway

REDIS = os.environ.get("GATEWAY_TEST_REDIS_URL")
CACHED = """  - {id: cached, mode: fixed, model: small, cache: {ttlSeconds: 60},
     budget: {daily: {requests: 100, cost: 1.00}}}
  - {id: brief, mode: fixed, model: small, cache: {ttlSeconds: 1}}"""


@pytest.fixture
def gateway(upstream: FakeUpstream, sqlite_url: str) -> Iterator[RunningGateway]:
    with running(budget_yaml(upstream.url, sqlite_url, configurations=CACHED)) as running_gw:
        yield running_gw


def _post(gateway: RunningGateway, raw: bytes, **headers: str) -> httpx.Response:
    sent = {"authorization": f"Bearer {TEST_KEY}", "content-type": "application/json", **headers}
    return httpx.post(f"{gateway.url}/v1/chat/completions", content=raw, headers=sent, timeout=10)


def _chat(gateway: RunningGateway, configuration: str = "cached", **extra: object) -> bytes:
    return msgspec.json.encode({"model": configuration, "messages": MESSAGES, **extra})


def test_a_second_identical_call_is_a_hit_unbilled_and_outside_the_call_history(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    client = gateway.client()
    first = client.chat.completions.with_raw_response.create(model="cached", messages=MESSAGES)
    second = client.chat.completions.with_raw_response.create(model="cached", messages=MESSAGES)
    assert upstream.calls["small-model"] == 1
    assert second.headers["x-gateway-cache"] == "hit"
    assert second.headers["x-gateway-cost-usd"] == "0"  # a hit costs nothing, and says so
    answer = second.parse()
    assert answer.choices[0].message.content == first.parse().choices[0].message.content
    assert answer.model == "small-model-2026-01-01"

    miss, hit = gateway.rows()
    assert miss["cache_hit"] == 0 and miss["actual_cost"] is not None
    assert hit["cache_hit"] == 1 and hit["success"] == 1 and hit["http_status"] == 200
    assert (hit["actual_input_tokens"], hit["actual_output_tokens"], hit["actual_cost"]) == (
        None,
        None,
        None,
    )
    assert (hit["provider"], hit["served_model"]) == (None, None)
    assert hit["response_model"] == "small-model-2026-01-01"

    used = _used(gateway, "cached")
    assert used["requests"] == 2  # the hit is a request served (see the budget tests below)
    assert float(used["cost"]) == float(miss["actual_cost"])  # and it cost nothing
    history = gateway.server.run(read_call_history(gateway.runtime.engine, 7, datetime.now(UTC)))
    assert history[("fake", "small", Operation.CHAT)].calls == 1


def test_usage_cost_reads_the_same_on_a_miss_and_on_a_hit_which_costs_nothing(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    """The README's `answer.usage.model_extra["cost"]`, on both calls: the price, then 0."""
    client = gateway.client()
    first = client.chat.completions.with_raw_response.create(model="cached", messages=MESSAGES)
    second = client.chat.completions.with_raw_response.create(model="cached", messages=MESSAGES)
    assert "x-gateway-cache" not in first.headers and second.headers["x-gateway-cache"] == "hit"
    miss, hit = first.parse(), second.parse()
    assert miss.usage is not None and hit.usage is not None
    assert miss.usage.model_extra is not None and hit.usage.model_extra is not None
    assert miss.usage.model_extra["cost"] > 0
    assert float(first.headers["x-gateway-cost-usd"]) == miss.usage.model_extra["cost"]
    assert hit.usage.model_extra["cost"] == 0
    assert second.headers["x-gateway-cost-usd"] == "0"
    assert hit.usage.prompt_tokens == miss.usage.prompt_tokens  # the usage as first served
    assert upstream.calls["small-model"] == 1


def _used(gateway: RunningGateway, configuration: str) -> dict[str, Any]:
    from sqlalchemy import select

    from gateway.db.budget_tables import budget_counters as t

    (row,) = query(
        gateway,
        select(t.c.requests, t.c.cost).where(t.c.scope_id == configuration, t.c.period == "day"),
    )
    return row


def test_different_bodies_miss_and_key_order_does_not_matter(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    assert _post(gateway, _chat(gateway)).status_code == 200
    assert _post(gateway, _chat(gateway, temperature=0.5)).status_code == 200
    other = [{"role": "user", "content": "Say goodbye."}]
    assert _post(gateway, msgspec.json.encode({"model": "cached", "messages": other}))
    assert upstream.calls["small-model"] == 3
    reordered = b'{"messages": [{"content": "Say hello.", "role": "user"}], "model": "cached"}'
    hit = _post(gateway, reordered)
    assert hit.headers.get("x-gateway-cache") == "hit"
    assert upstream.calls["small-model"] == 3


def test_an_answer_expires_after_its_ttl_and_is_purged(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    body = _chat(gateway, "brief")
    _post(gateway, body)
    assert _post(gateway, body).headers.get("x-gateway-cache") == "hit"
    time.sleep(1.2)
    assert gateway.server.run(gateway.runtime.cache.backend.purge()) == 1
    assert "x-gateway-cache" not in _post(gateway, body).headers
    assert upstream.calls["small-model"] == 2


def test_the_no_cache_header_bypasses_the_cache(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    body = _chat(gateway)
    _post(gateway, body)
    bypassed = _post(gateway, body, **{"x-gateway-cache": "no-cache"})
    assert bypassed.status_code == 200 and "x-gateway-cache" not in bypassed.headers
    assert upstream.calls["small-model"] == 2
    assert _post(gateway, body).headers.get("x-gateway-cache") == "hit"
    assert upstream.calls["small-model"] == 2


def test_streams_are_not_cached(gateway: RunningGateway, upstream: FakeUpstream) -> None:
    client = gateway.client()
    for _ in range(2):
        list(client.chat.completions.create(model="cached", messages=MESSAGES, stream=True))
    assert upstream.calls["small-model"] == 2


def test_configurations_without_cache_are_never_cached(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    body = _chat(gateway, "chat")
    _post(gateway, body)
    _post(gateway, body)
    assert upstream.calls["small-model"] == 2


def test_a_broken_database_store_costs_a_miss_not_the_call(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    async def drop() -> None:
        async with gateway.runtime.engine.begin() as connection:
            await connection.execute(text("DROP TABLE response_cache"))

    gateway.server.run(drop())
    body = _chat(gateway)
    assert _post(gateway, body).status_code == 200
    assert _post(gateway, body).status_code == 200
    assert upstream.calls["small-model"] == 2


def _dead_redis_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"redis://127.0.0.1:{port}/0"


def test_a_redis_store_that_is_down_costs_a_miss_not_the_call(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    cache = f'{{store: redis, redisUrl: "{_dead_redis_url()}"}}'
    yaml = budget_yaml(upstream.url, sqlite_url, configurations=CACHED, cache=cache)
    with running(yaml) as gateway:
        body = _chat(gateway)
        assert _post(gateway, body).status_code == 200
        assert _post(gateway, body).status_code == 200
    assert upstream.calls["small-model"] == 2


@pytest.mark.skipif(not REDIS, reason="GATEWAY_TEST_REDIS_URL is not set")
def test_the_redis_store_answers_hits_with_redis_expiry(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    import redis

    configuration = f"cached-{uuid.uuid4().hex[:8]}"  # keys of its own on a shared Redis
    configurations = (
        f"  - {{id: {configuration}, mode: fixed, model: small, cache: {{ttlSeconds: 30}}}}"
    )
    cache = f'{{store: redis, redisUrl: "{REDIS}"}}'
    yaml = budget_yaml(upstream.url, sqlite_url, configurations=configurations, cache=cache)
    direct = redis.Redis.from_url(str(REDIS))
    before = set(direct.keys("gateway:cache:*"))
    try:
        with running(yaml) as gateway:
            body = _chat(gateway, configuration)
            _post(gateway, body)
            assert _post(gateway, body).headers.get("x-gateway-cache") == "hit"
            assert upstream.calls["small-model"] == 1
            assert gateway.rows()[-1]["cache_hit"] == 1
        (added,) = set(direct.keys("gateway:cache:*")) - before
        assert 0 < int(direct.ttl(added)) <= 30
    finally:
        for key in set(direct.keys("gateway:cache:*")) - before:
            direct.delete(key)
        direct.close()


CAROL_KEY = "sk-test-carol-1357913579"
SCOPED = """  - {id: shared, mode: fixed, model: small, cache: {ttlSeconds: 60}}
  - {id: private, mode: fixed, model: small, cache: {ttlSeconds: 60, scope: key}}"""


def _scoped_gateway(upstream: FakeUpstream, url: str, alice: str = "") -> Any:
    carol = '    - {id: carol, key: "${CAROL_KEY}"}'
    yaml = budget_yaml(upstream.url, url, alice=alice, keys=carol, configurations=SCOPED)
    return running(yaml, {"CAROL_KEY": CAROL_KEY})


def _as(gateway: RunningGateway, key: str, configuration: str) -> httpx.Response:
    return httpx.post(
        f"{gateway.url}/v1/chat/completions",
        content=_chat(gateway, configuration),
        headers={"authorization": f"Bearer {key}", "content-type": "application/json"},
        timeout=10,
    )


def test_by_default_one_answer_is_shared_by_every_key(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    with _scoped_gateway(upstream, sqlite_url) as gateway:
        assert "x-gateway-cache" not in _as(gateway, TEST_KEY, "shared").headers
        assert _as(gateway, CAROL_KEY, "shared").headers.get("x-gateway-cache") == "hit"
        assert upstream.calls["small-model"] == 1


def test_a_cache_scoped_to_the_key_never_answers_one_key_with_anothers_answer(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    with _scoped_gateway(upstream, sqlite_url) as gateway:
        assert "x-gateway-cache" not in _as(gateway, TEST_KEY, "private").headers
        assert "x-gateway-cache" not in _as(gateway, CAROL_KEY, "private").headers
        assert upstream.calls["small-model"] == 2
        assert _as(gateway, TEST_KEY, "private").headers.get("x-gateway-cache") == "hit"
        assert _as(gateway, CAROL_KEY, "private").headers.get("x-gateway-cache") == "hit"
        assert upstream.calls["small-model"] == 2


@pytest.mark.parametrize("backend", HTTP_BACKENDS)
def test_a_hit_counts_as_a_request_and_a_key_past_its_request_budget_gets_no_cached_answer(
    backend: str, upstream: FakeUpstream, tmp_path: Path
) -> None:
    with (
        database(backend, tmp_path) as url,
        _scoped_gateway(upstream, url, alice="budget: {daily: {requests: 2}}") as gateway,
    ):
        assert _as(gateway, TEST_KEY, "shared").status_code == 200
        assert _as(gateway, TEST_KEY, "shared").headers.get("x-gateway-cache") == "hit"
        refused = _as(gateway, TEST_KEY, "shared")
        assert refused.status_code == 429
        assert refused.json()["error"]["code"] == "budget_exceeded"
        assert (
            "key 'alice' daily requests budget of 2 requests" in refused.json()["error"]["message"]
        )
        assert _as(gateway, CAROL_KEY, "shared").headers.get("x-gateway-cache") == "hit"
        assert upstream.calls["small-model"] == 1
        used = counter(gateway, "key", "alice")
        assert used is not None and used["requests"] == 2
        third = [r for r in gateway.rows(expect=4) if r["api_key_id"] == "alice"][-1]
        assert (third["http_status"], third["error_class"], third["cache_hit"]) == (
            429,
            "budget_exceeded",
            0,
        )


def test_a_hit_costs_no_tokens_or_money_against_those_budgets(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    alice = "budget: {daily: {tokens: 30, cost: 0.01}}"
    with _scoped_gateway(upstream, sqlite_url, alice=alice) as gateway:
        body = msgspec.json.encode({"model": "shared", "messages": MESSAGES, "max_tokens": 5})
        answers = [_post(gateway, body) for _ in range(4)]
        assert [a.status_code for a in answers] == [200] * 4
        assert [a.headers.get("x-gateway-cache") for a in answers] == [None, "hit", "hit", "hit"]
        used = counter(gateway, "key", "alice")
        assert used is not None and (used["requests"], used["tokens"]) == (1, 12 + 7)
        assert float(used["cost"]) == float(gateway.rows(expect=4)[0]["actual_cost"])
