"""The response cache end to end: hits answer without the upstream, unbilled, unhistoried."""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import msgspec
import pytest
from sqlalchemy import text

from gateway.domain import Operation
from gateway.signals.history import read_call_history
from tests.integration.budget_support import MESSAGES, budget_yaml, query, running
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
    assert "x-gateway-cost-usd" not in second.headers
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
    assert used["requests"] == 1  # the hit was not billed
    assert float(used["cost"]) == float(miss["actual_cost"])
    history = gateway.server.run(read_call_history(gateway.runtime.engine, 7, datetime.now(UTC)))
    assert history[("fake", "small", Operation.CHAT)].calls == 1


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
