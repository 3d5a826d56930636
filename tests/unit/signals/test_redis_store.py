"""Signal readings in a real Redis: exact round trips, one database read for many
refreshers, and a store that goes away costs only its sharing."""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import timedelta
from decimal import Decimal

import pytest
from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.redis_client import redis_client
from gateway.db.redis_values import SkippedValues
from gateway.domain import GatewayConfig, HealthSample, HistoryFigures, Operation, RoutingSettings
from gateway.domain.settings import HealthSettings
from gateway.signals.redis_store import RedisSignalStore
from gateway.signals.refresher import SignalReading, SignalRefresher
from tests.support.tcp_proxy import TcpProxy
from tests.unit.signals.test_refresher import _seed
from tests.unit.telemetry.factory import NOW

REDIS = os.environ.get("GATEWAY_TEST_REDIS_URL")
pytestmark = pytest.mark.skipif(not REDIS, reason="GATEWAY_TEST_REDIS_URL is not set")
HISTORY_ON = GatewayConfig(routing=RoutingSettings(call_history=True))


@pytest.fixture
def prefix() -> str:
    return f"test:signals:{uuid.uuid4().hex}:"


@pytest.fixture
async def redis(prefix: str) -> AsyncIterator[Redis]:
    # Patient timeouts: on a loaded test machine a slow answer must not pass for an outage.
    client = Redis.from_url(str(REDIS), socket_timeout=10, socket_connect_timeout=10)
    yield client
    keys = [key async for key in client.scan_iter(match=f"{prefix}*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()


async def test_each_snapshot_round_trips_exactly(redis: Redis, prefix: str) -> None:
    store = RedisSignalStore(redis, HISTORY_ON, prefix=prefix)
    assert await store.get_health() is None
    health = {"a": HealthSample(10, 9, 200.5), "b": HealthSample(4, 0, None)}
    quality = {("a", "m1"): 0.75, ("b", "m2"): 0.5}
    history = {
        ("a", "m1", Operation.CHAT): HistoryFigures(12, 310.25, 11, Decimal("0.000123456789")),
        ("b", "m2", Operation.EMBEDDING): HistoryFigures(5, None, 0, None),
    }
    await store.set_health(SignalReading(health, NOW))
    await store.set_quality(SignalReading(quality, NOW))
    await store.set_history(SignalReading(history, NOW - timedelta(seconds=5)))
    assert await store.get_health() == SignalReading(health, NOW)
    assert await store.get_quality() == SignalReading(quality, NOW)
    assert await store.get_history() == SignalReading(history, NOW - timedelta(seconds=5))


async def test_settings_that_shape_a_read_keep_their_snapshots_apart(
    redis: Redis, prefix: str
) -> None:
    other = replace(HISTORY_ON, health=HealthSettings(window_seconds=60))
    await RedisSignalStore(redis, HISTORY_ON, prefix=prefix).set_health(
        SignalReading({"a": HealthSample(1, 1, 1.0)}, NOW)
    )
    assert await RedisSignalStore(redis, other, prefix=prefix).get_health() is None


async def test_the_lease_is_held_by_one_process_at_a_time(redis: Redis, prefix: str) -> None:
    first, second = (RedisSignalStore(redis, HISTORY_ON, prefix=prefix) for _ in range(2))
    async with first.lease("health", 5) as held:
        assert held is True
        async with second.lease("health", 5) as also:
            assert also is False
    async with second.lease("health", 5) as held:
        assert held is True  # released by its holder


async def test_refreshers_sharing_the_store_read_the_database_once_per_period(
    engine: AsyncEngine, redis: Redis, prefix: str
) -> None:
    await _seed(engine)
    refreshers = [
        SignalRefresher(
            engine,
            HISTORY_ON,
            lambda: NOW,
            store=RedisSignalStore(redis, HISTORY_ON, prefix=prefix),
            lease_seconds=120,  # however slow the holder's read, the others wait for it
        )
        for _ in range(3)
    ]
    await asyncio.gather(*(r.refresh_due() for r in refreshers))  # at the same moment
    for name in ("health", "quality", "history"):
        assert sum(r.database_reads.get(name, 0) for r in refreshers) == 1
        assert sum(r.shared_reads.get(name, 0) for r in refreshers) == 2
    assert all(r.health == {"openai-main": HealthSample(1, 1, 250.0)} for r in refreshers)
    assert len({id(r.history) for r in refreshers}) == 3  # each its own copy...
    assert all(r.history == refreshers[0].history for r in refreshers)  # ...of one read
    assert {r.history_taken_at for r in refreshers} == {NOW}


async def test_a_store_that_goes_away_means_reading_the_database_logged_once(
    engine: AsyncEngine, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    await _seed(engine)
    forwarder, url = TcpProxy.for_url(str(REDIS))
    client = redis_client(url)
    try:
        refresher = SignalRefresher(
            engine,
            HISTORY_ON,
            lambda: NOW,
            store=RedisSignalStore(client, HISTORY_ON, prefix=prefix),
        )
        forwarder.down()
        with caplog.at_level(logging.WARNING, logger="gateway.signals"):
            await refresher.refresh_due()
            await refresher.refresh_due()
            assert refresher.store_answers is False
            assert refresher.database_reads == {"health": 2, "quality": 2, "history": 2}
            assert refresher.health == {"openai-main": HealthSample(1, 1, 250.0)}
            assert (refresher.health_read_failures, refresher.history_read_failures) == (0, 0)
            forwarder.up()
            await refresher.refresh_due()  # a fresh reading saved, now shared again
            assert refresher.store_answers is True
        messages = [r.getMessage() for r in caplog.records]
        assert sum("does not answer" in m for m in messages) == 1
        assert sum("answers again" in m for m in messages) == 1
    finally:
        await client.aclose()
        forwarder.close()


async def test_an_undecodable_or_future_reading_is_no_reading_and_is_counted(
    redis: Redis, prefix: str
) -> None:
    skipped = SkippedValues()
    store = RedisSignalStore(redis, HISTORY_ON, prefix=prefix, skipped=skipped, clock=lambda: NOW)
    await store.set_quality(SignalReading({("p", "m"): 0.5}, NOW + timedelta(days=365)))
    assert await store.get_quality() is None
    await store.set_health(SignalReading({}, NOW))
    keys = [key async for key in redis.scan_iter(match=f"{prefix}health:*")]
    (health_key,) = keys
    await redis.set(health_key, b"\xc1")
    assert await store.get_health() is None
    assert skipped.counts == {"signals:quality": 1, "signals:health": 1}
    await store.set_quality(SignalReading({("p", "m"): 0.5}, NOW))  # a valid one: taken
    reading = await store.get_quality()
    assert reading is not None and reading.value == {("p", "m"): 0.5}
