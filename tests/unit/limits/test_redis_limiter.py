"""The limiter on a real Redis: one script per check, exact under concurrent callers from
several clients, tokens settled, slots freed; Redis away means local limits or refusals,
logged once each way."""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
from redis.asyncio import Redis

from gateway.db.redis_client import redis_client
from gateway.domain.errors import RateLimitUnavailable
from gateway.domain.limits import RateLimit
from gateway.limits.decisions import CONCURRENT, REQUESTS, TOKENS, Scope
from gateway.limits.local import InProcessLimiter
from gateway.limits.redis_limiter import RedisLimiter
from tests.support.tcp_proxy import TcpProxy

REDIS = os.environ.get("GATEWAY_TEST_REDIS_URL")
pytestmark = pytest.mark.skipif(not REDIS, reason="GATEWAY_TEST_REDIS_URL is not set")
LEASE_MS = 60_000


@pytest.fixture
def prefix() -> str:
    return f"test:rl:{uuid.uuid4().hex}:"


@pytest.fixture
async def redis(prefix: str) -> AsyncIterator[Redis]:
    client = redis_client(str(REDIS))
    yield client
    keys = [k async for k in client.scan_iter(match=prefix + "*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()


@pytest.fixture
def proxy() -> Iterator[tuple[TcpProxy, str]]:
    proxy, url = TcpProxy.for_url(str(REDIS))
    yield proxy, url
    proxy.close()


def _limiter(redis: Redis, prefix: str, **kwargs: object) -> RedisLimiter:
    local = InProcessLimiter(LEASE_MS)
    return RedisLimiter(redis, local, lease_ms=LEASE_MS, prefix=prefix, **kwargs)  # type: ignore[arg-type]


async def test_concurrent_checks_from_three_clients_admit_exactly_the_limit(
    redis: Redis, prefix: str
) -> None:
    clients = [redis_client(str(REDIS)) for _ in range(3)]
    limiters = [_limiter(client, prefix) for client in clients]
    scope = Scope("key", "ci", RateLimit(requests_per_minute=100))
    try:
        outcomes = await asyncio.gather(*(limiters[i % 3].admit([scope], 0) for i in range(300)))
    finally:
        for client in clients:
            await client.aclose()
    admitted = [ticket for _, ticket in outcomes if ticket is not None]
    assert len(admitted) == 100
    refused = [verdict for verdict, ticket in outcomes if ticket is None]
    assert {v.measure for v in refused} == {REQUESTS}
    assert all(0 < v.readings[0].requests_wait_ms <= 60_000 for v in refused)


async def test_every_scope_or_none_is_counted(redis: Redis, prefix: str) -> None:
    limiter = _limiter(redis, prefix)
    key = Scope("key", "ci", RateLimit(requests_per_minute=10))
    team = Scope("team", "t", RateLimit(requests_per_minute=1))
    verdict, ticket = await limiter.admit([key, team], 0)
    assert ticket is not None and [r.requests for r in verdict.readings] == [1, 1]
    verdict, ticket = await limiter.admit([key, team], 0)
    assert ticket is None and verdict.refused == 1
    verdict, _ = await limiter.admit([key], 0)
    assert verdict.readings[0].requests == 2


async def test_tokens_settle_to_the_real_usage(redis: Redis, prefix: str) -> None:
    limiter = _limiter(redis, prefix)
    scope = Scope("key", "ci", RateLimit(tokens_per_minute=1000))
    _, first = await limiter.admit([scope], 800)
    assert first is not None and not first.local
    verdict, ticket = await limiter.admit([scope], 300)
    assert ticket is None and verdict.measure == TOKENS
    assert 0 < verdict.readings[0].tokens_wait_ms <= 60_000
    await limiter.settle(first, 100)
    verdict, ticket = await limiter.admit([scope], 300)
    assert ticket is not None and verdict.readings[0].tokens == 400


async def test_entries_leave_the_window(redis: Redis, prefix: str) -> None:
    limiter = _limiter(redis, prefix, window_ms=300)
    scope = Scope("key", "ci", RateLimit(requests_per_minute=1, tokens_per_minute=10))
    assert (await limiter.admit([scope], 10))[1] is not None
    assert (await limiter.admit([scope], 10))[1] is None
    await asyncio.sleep(0.4)
    verdict, ticket = await limiter.admit([scope], 10)
    assert ticket is not None and verdict.readings[0].tokens == 10


async def test_slots_are_freed_when_calls_end(redis: Redis, prefix: str) -> None:
    limiter = _limiter(redis, prefix)
    scope = Scope("configuration", "chat", RateLimit(concurrent=2))
    tickets = [(await limiter.admit([scope], 0))[1] for _ in range(3)]
    first, second, third = tickets
    assert first is not None and second is not None and third is None
    verdict, _ = await limiter.admit([scope], 0)
    assert verdict.measure == CONCURRENT and verdict.readings[0].in_flight == 2
    await limiter.settle(first, None)
    assert (await limiter.admit([scope], 0))[1] is not None


async def test_outage_local_limits_alone_and_logs_once_each_way(
    prefix: str, proxy: tuple[TcpProxy, str], caplog: pytest.LogCaptureFixture
) -> None:
    forwarder, url = proxy
    clock = [100.0]
    client = redis_client(url)
    limiter = RedisLimiter(
        client,
        InProcessLimiter(LEASE_MS),
        lease_ms=LEASE_MS,
        prefix=prefix,
        monotonic=lambda: clock[0],
    )
    scope = Scope("key", "ci", RateLimit(requests_per_minute=2))
    try:
        assert (await limiter.admit([scope], 0))[1] is not None  # shared: 1 in Redis
        forwarder.down()
        await client.connection_pool.disconnect()
        caplog.set_level(logging.WARNING, logger="gateway.limits.redis_limiter")
        outcomes = [await limiter.admit([scope], 0) for _ in range(3)]
        tickets = [ticket for _, ticket in outcomes]
        # Alone, this process counts from zero: two admitted, the third refused.
        assert [t is not None for t in tickets] == [True, True, False]
        assert all(t is None or t.local for t in tickets)
        await limiter.settle(tickets[0], None)  # type: ignore[arg-type]
        forwarder.up()
        clock[0] += 2.0  # past the pause after a failure
        verdict, ticket = await limiter.admit([scope], 0)
        assert ticket is not None and not ticket.local and verdict.readings[0].requests == 2
        lines = [r.getMessage() for r in caplog.records]
        assert sum("Redis unreachable" in line for line in lines) == 1
        assert sum("answers again" in line for line in lines) == 1
    finally:
        await client.aclose()


async def test_outage_refuse_answers_rate_limit_unavailable(
    prefix: str, proxy: tuple[TcpProxy, str]
) -> None:
    forwarder, url = proxy
    client = redis_client(url)
    limiter = RedisLimiter(
        client,
        InProcessLimiter(LEASE_MS),
        lease_ms=LEASE_MS,
        prefix=prefix,
        refuse_on_outage=True,
    )
    scope = Scope("key", "ci", RateLimit(requests_per_minute=2))
    forwarder.down()
    try:
        with pytest.raises(RateLimitUnavailable) as raised:
            await limiter.admit([scope], 0)
        assert raised.value.http_status == 503
        assert raised.value.code == "rate_limit_unavailable"
    finally:
        await client.aclose()
