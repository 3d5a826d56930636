"""Rate limits exact across three ``gateway serve`` replicas on PostgreSQL and Redis: 300
calls over the three against ``requestsPerMinute: 100`` admit exactly 100, a
``tokensPerMinute`` limit admits no call that would pass it, ``concurrent: 5`` never has
a sixth call in flight; and Redis cut off and back behaves as ``onRedisOutage`` says
(docs/operations.md, "Rate limits")."""

from __future__ import annotations

import os
import time
from pathlib import Path

import httpx
import pytest
import redis

from tests.integration.budget_support import burst, chat_body, database, statuses
from tests.integration.test_replicas import Replica, _clear, _replicas
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import OTHER_KEY, TEST_KEY
from tests.support.tcp_proxy import TcpProxy

POSTGRES = os.environ.get("GATEWAY_TEST_POSTGRES_URL")
REDIS = os.environ.get("GATEWAY_TEST_REDIS_URL")
pytestmark = pytest.mark.skipif(
    not (POSTGRES and REDIS), reason="GATEWAY_TEST_POSTGRES_URL and GATEWAY_TEST_REDIS_URL"
)
TOKENS_KEY = "sk-test-tokens-0123456789"
SLOTS_KEY = "sk-test-slots-0123456789"


def _yaml(upstream: str, database_url: str, redis_url: str, outage: str = "local") -> str:
    return f"""
server: {{host: 127.0.0.1, requestTimeoutSeconds: 20}}
database: {{url: "{database_url}"}}
redis: {{url: "{redis_url}"}}
rateLimits: {{onRedisOutage: {outage}}}
auth:
  adminKey: ${{ADMIN_KEY}}
  keys:
    - {{id: alice, key: "${{ALICE_KEY}}", rateLimit: {{requestsPerMinute: 100}}}}
    - {{id: bob, key: "${{BOB_KEY}}"}}
    - {{id: tokens, key: "{TOKENS_KEY}", rateLimit: {{tokensPerMinute: 2000}}}}
    - {{id: slots, key: "{SLOTS_KEY}", rateLimit: {{concurrent: 5}}}}
circuitBreaker: {{failureThreshold: 1000, cooldownSeconds: 30}}
providers:
  - {{id: fake, adapter: openai, baseUrl: "{upstream}/v1", timeoutSeconds: 5, maxRetries: 0}}
models:
  - {{id: small, provider: fake, name: small-model, capabilities: [chat]}}
configurations:
  - {{id: chat, mode: fixed, model: small}}
"""


def _urls(replicas: list[Replica]) -> list[str]:
    return [replica.url for replica in replicas]


def test_limits_are_exact_across_three_replicas(upstream: FakeUpstream, tmp_path: Path) -> None:
    assert REDIS is not None
    _clear(REDIS)
    upstream.behave("small-model", latency_ms=500)  # the bursts' calls overlap
    with database("postgresql", tmp_path) as url:
        config = tmp_path / "gateway.yaml"
        config.write_text(_yaml(upstream.url, url, REDIS))
        with _replicas(config, tmp_path) as replicas:
            urls = _urls(replicas)
            answers = burst(urls, [chat_body()] * 300)
            outages = [r.output().count("rate limits: Redis unreachable") for r in replicas]
            assert outages == [0, 0, 0], "a replica lost Redis during the burst"
            assert statuses(answers) == {200: 100, 429: 200}
            assert upstream.calls["small-model"] == 100
            served_by = {u: 0 for u in urls}
            for index, answer in enumerate(answers):
                served_by[urls[index % 3]] += answer.status_code == 200
            print(f"admitted per replica: {list(served_by.values())}")

            # Each call holds its prompt (about 10 tokens) + 400: four fit in 2000, a
            # fifth would pass it.
            upstream.reset()
            upstream.behave("small-model", latency_ms=500)
            tokens = burst(urls, [chat_body(max_tokens=400)] * 30, key=TOKENS_KEY)
            assert statuses(tokens) == {200: 4, 429: 26}
            assert upstream.calls["small-model"] == 4

            upstream.reset()
            upstream.behave("small-model", latency_ms=800)
            slots = burst(urls, [chat_body()] * 30, key=SLOTS_KEY)
            assert upstream.max_in_flight <= 5
            assert statuses(slots) == {200: 5, 429: 25}
            assert statuses(burst(urls, [chat_body()] * 5, key=SLOTS_KEY)) == {200: 5}


def _statuses_through(replicas: list[Replica], key: str, count: int) -> list[int]:
    return [
        httpx.post(
            f"{replicas[i % len(replicas)].url}/v1/chat/completions",
            json=chat_body(),
            headers={"authorization": f"Bearer {key}"},
            timeout=30,
        ).status_code
        for i in range(count)
    ]


@pytest.mark.parametrize("outage", ["local", "refuse"])
def test_redis_cut_off_and_back_behaves_as_configured(
    upstream: FakeUpstream, tmp_path: Path, outage: str
) -> None:
    assert REDIS is not None
    _clear(REDIS)
    proxy, through_proxy = TcpProxy.for_url(REDIS)
    try:
        with database("postgresql", tmp_path) as url:
            config = tmp_path / "gateway.yaml"
            config.write_text(
                _yaml(upstream.url, url, through_proxy, outage).replace(
                    "requestsPerMinute: 100", "requestsPerMinute: 4"
                )
            )
            with _replicas(config, tmp_path) as replicas:
                assert _statuses_through(replicas, TEST_KEY, 3) == [200] * 3  # 3 of 4, shared
                proxy.down()
                away = _statuses_through(replicas, TEST_KEY, 15)
                unlimited = _statuses_through(replicas, OTHER_KEY, 3)
                assert unlimited == [200] * 3  # a key with no limit never notices
                if outage == "refuse":
                    assert set(away) == {503}
                    refused = httpx.post(
                        f"{replicas[0].url}/v1/chat/completions",
                        json=chat_body(),
                        headers={"authorization": f"Bearer {TEST_KEY}"},
                    )
                    assert refused.json()["error"]["code"] == "rate_limit_unavailable"
                    assert refused.headers["retry-after"] == "1"
                else:
                    # Each replica alone, from its own empty count: 4 each, 12 in all.
                    assert away.count(200) == 12 and away.count(429) == 3
                proxy.up()
                deadline = time.monotonic() + 10
                # Each replica asks Redis again a second after its last failure.
                while not all("rate limits: Redis answers" in r.output() for r in replicas):
                    assert time.monotonic() < deadline, "a replica never found Redis again"
                    _statuses_through(replicas, TEST_KEY, 3)
                    time.sleep(0.3)
                # Shared again: the 3 admitted before the cut and exactly one since are in
                # Redis (what the replicas admitted alone was never copied there).
                shared = redis.Redis.from_url(REDIS)
                try:
                    assert shared.zcard("gateway:rl:key:alice:r") == 4
                finally:
                    shared.close()
                for replica in replicas:
                    log = replica.output()
                    assert log.count("rate limits: Redis unreachable") == 1, log[-3000:]
                    assert log.count("rate limits: Redis answers again") == 1
    finally:
        proxy.close()
