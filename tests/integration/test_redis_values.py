"""Values read from Redis are checked, one by one (docs/operations.md, "Values read from
Redis"): a circuit opening of ``inf``, a field name that is not UTF-8, a health reading
dated 2099 and an undecodable cache entry are each skipped and counted, while calls are
served, the providers page answers, and the circuit sync goes on adopting later values.

A real server on a real Redis, in a database of its own (others' tests use db 0 and
clear ``gateway:*`` there); only the keys this test wrote are deleted.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest
import redis

from gateway.domain import HealthSample
from gateway.signals.redis_store import RedisSignalStore
from gateway.signals.refresher import SignalReading
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import ADMIN_KEY, TEST_KEY, RunningGateway, gateway_yaml

REDIS = os.environ.get("GATEWAY_TEST_REDIS_URL")
pytestmark = pytest.mark.skipif(not REDIS, reason="GATEWAY_TEST_REDIS_URL is not set")
DATABASE = 11  # a Redis database of this file's own


def _own_database(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{DATABASE}"))


@pytest.fixture
def redis_url() -> Iterator[str]:
    url = _own_database(str(REDIS))
    direct = redis.Redis.from_url(url)
    before = set(direct.keys("gateway:*"))
    yield url
    for key in set(direct.keys("gateway:*")) - before:
        direct.delete(key)
    direct.delete("gateway:circuits")
    direct.close()


@pytest.fixture
def gateway(upstream: FakeUpstream, sqlite_url: str, redis_url: str) -> Iterator[RunningGateway]:
    extra = f'redis: {{url: "{redis_url}"}}\ncache: {{store: redis}}\nhealth: {{cacheSeconds: 1}}\n'
    configurations = "  - {id: cached, mode: fixed, model: small, cache: {ttlSeconds: 300}}"
    running = RunningGateway(
        gateway_yaml(upstream.url, sqlite_url, configurations=configurations, extra=extra)
    )
    yield running
    running.stop()


def _metric(gateway: RunningGateway, name: str, **labels: str) -> float:
    text = httpx.get(f"{gateway.url}/metrics", timeout=10).text
    wanted = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    for line in text.splitlines():
        found = re.fullmatch(rf"{name}(?:\{{(.*)\}})? (\S+)", line)
        if found and (found.group(1) or "") == wanted:
            return float(found.group(2))
    return 0.0


def _wait_for(check: Callable[[], bool], seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError("timed out")


def _chat(gateway: RunningGateway, configuration: str) -> httpx.Response:
    return httpx.post(
        f"{gateway.url}/v1/chat/completions",
        json={"model": configuration, "messages": [{"role": "user", "content": "Hi"}]},
        headers={"authorization": f"Bearer {TEST_KEY}"},
        timeout=30,
    )


def _providers(gateway: RunningGateway) -> httpx.Response:
    bearer = {"authorization": f"Bearer {ADMIN_KEY}"}
    return httpx.get(f"{gateway.url}/admin/api/providers", headers=bearer, timeout=10)


def _circuit(gateway: RunningGateway, provider: str) -> str:
    answer = _providers(gateway)
    assert answer.status_code == 200, answer.text
    (found,) = [p for p in answer.json()["providers"] if p["id"] == provider]
    circuit: str = found["circuit"]["state"]
    return circuit


def test_bad_circuit_fields_are_skipped_and_the_sync_goes_on(
    gateway: RunningGateway, redis_url: str
) -> None:
    direct = redis.Redis.from_url(redis_url)
    try:
        direct.hset("gateway:circuits", mapping={b"\xff\xfe": b"1", "fake": "inf"})
        # A valid opening written later: adopted only if the sync task read past the
        # bad fields and is still alive.
        direct.hset("gateway:circuits", "impatient", repr(time.time()))
        _wait_for(lambda: _circuit(gateway, "impatient") == "open")
        assert _circuit(gateway, "fake") == "closed"  # `inf` refuses nothing
        assert _chat(gateway, "chat").status_code == 200
        assert _providers(gateway).status_code == 200
        skipped = _metric(gateway, "gateway_redis_values_skipped_total", source="circuits")
        assert skipped >= 2
        restarts = _metric(gateway, "gateway_background_task_restarts_total", task="circuit-states")
        assert restarts == 0
    finally:
        direct.close()


def test_a_health_reading_dated_2099_is_not_taken(gateway: RunningGateway, redis_url: str) -> None:
    async def plant() -> None:
        client = redis.asyncio.Redis.from_url(redis_url)
        try:
            store = RedisSignalStore(client, gateway.runtime.config)
            sick = {"fake": HealthSample(samples=1000, successes=0, avg_latency_ms=9999.0)}
            await store.set_health(SignalReading(sick, datetime(2099, 1, 1, tzinfo=UTC)))
        finally:
            await client.aclose()

    reads = _metric(gateway, "gateway_signal_reads", signal="health", source="database")
    asyncio.run(plant())
    # The next rounds read the database: the reading from 2099 is not taken as fresh.
    _wait_for(
        lambda: (
            _metric(gateway, "gateway_signal_reads", signal="health", source="database")
            >= reads + 2
        )
    )
    assert _metric(gateway, "gateway_signal_reads", signal="health", source="shared") == 0
    skipped = _metric(gateway, "gateway_redis_values_skipped_total", source="signals:health")
    assert skipped >= 1
    assert _chat(gateway, "chat").status_code == 200
    assert _providers(gateway).status_code == 200


def test_an_undecodable_cache_entry_is_one_miss_not_an_outage(
    gateway: RunningGateway, upstream: FakeUpstream, redis_url: str
) -> None:
    assert _chat(gateway, "cached").status_code == 200
    assert _chat(gateway, "cached").headers.get("x-gateway-cache") == "hit"
    direct = redis.Redis.from_url(redis_url)
    try:
        (entry,) = direct.keys("gateway:cache:*")
        direct.set(entry, b"\xc1 not msgpack")
    finally:
        direct.close()
    calls = upstream.calls["small-model"]
    assert _chat(gateway, "cached").status_code == 200  # a miss, answered upstream
    assert upstream.calls["small-model"] == calls + 1
    # The cache is still on: the answer stored again is the next call's hit.
    assert _chat(gateway, "cached").headers.get("x-gateway-cache") == "hit"
    assert upstream.calls["small-model"] == calls + 1
    assert _metric(gateway, "gateway_redis_values_skipped_total", source="cache") == 1
