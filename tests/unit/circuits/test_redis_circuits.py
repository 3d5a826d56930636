"""Circuit states shared through a real Redis: what one process opens, another refuses;
Redis gone means per-process circuits, logged once, and shared again when it answers."""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
from redis.asyncio import Redis

from gateway.circuits import CircuitStates, InProcessCircuits
from gateway.circuits.redis_circuits import RedisCircuits
from gateway.db.redis_client import redis_client
from gateway.db.redis_values import SkippedValues
from tests.support.tcp_proxy import TcpProxy

REDIS = os.environ.get("GATEWAY_TEST_REDIS_URL")
pytestmark = pytest.mark.skipif(not REDIS, reason="GATEWAY_TEST_REDIS_URL is not set")


class Clocks:
    """One machine's two clocks, moved together by the test."""

    def __init__(self) -> None:
        self.mono = 1000.0
        self.epoch = 1_800_000_000.0

    def wall(self) -> float:
        return self.epoch

    def monotonic(self) -> float:
        return self.mono

    def advance(self, seconds: float) -> None:
        self.mono += seconds
        self.epoch += seconds


@pytest.fixture
def key() -> str:
    return f"test:circuits:{uuid.uuid4().hex}"


@pytest.fixture
async def redis(key: str) -> AsyncIterator[Redis]:
    client = redis_client(str(REDIS))
    yield client
    await client.delete(key)
    await client.aclose()


@pytest.fixture
def proxy() -> Iterator[tuple[TcpProxy, str]]:
    proxy, url = TcpProxy.for_url(str(REDIS))
    yield proxy, url
    proxy.close()


def _circuits(redis: Redis, key: str, clocks: Clocks, threshold: int = 3) -> RedisCircuits:
    return RedisCircuits(
        redis, threshold, 30.0, key=key, wall=clocks.wall, monotonic=clocks.monotonic
    )


def _open(circuits: RedisCircuits, provider: str, now: float, threshold: int = 3) -> None:
    assert [circuits.record_failure(provider, now) for _ in range(threshold)][-1] is True


def test_both_implementations_satisfy_the_interface() -> None:
    def accepts(states: CircuitStates) -> CircuitStates:
        return states

    assert accepts(InProcessCircuits(5, 30.0)).cooldown_seconds == 30.0


async def test_a_circuit_opened_in_one_process_refuses_the_provider_in_another(
    redis: Redis, key: str
) -> None:
    clocks = Clocks()
    a, b = _circuits(redis, key, clocks), _circuits(redis, key, clocks)
    await b.sync()
    _open(a, "fake", clocks.mono)
    assert b.open_providers(clocks.mono) == frozenset()  # not written yet
    await a.sync()
    clocks.advance(10.0)
    await b.sync()
    assert b.open_providers(clocks.mono) == frozenset({"fake"})
    assert not b.try_acquire("fake", clocks.mono)
    # The cooldown counts from when it opened in a: 20 s more, not 30.
    assert not b.try_acquire("fake", clocks.mono + 19.9)
    assert b.try_acquire("fake", clocks.mono + 20.0)
    assert b.open_providers(clocks.mono) == frozenset({"fake"})
    assert (await redis.hkeys(key)) == [b"fake"]  # type: ignore[misc]


async def test_a_probe_that_succeeds_anywhere_closes_the_circuit_everywhere(
    redis: Redis, key: str
) -> None:
    clocks = Clocks()
    a, b = _circuits(redis, key, clocks), _circuits(redis, key, clocks)
    _open(a, "fake", clocks.mono)
    await a.sync()
    await b.sync()
    clocks.advance(31.0)
    assert b.try_acquire("fake", clocks.mono)  # b's probe
    assert b.record_success("fake") is True
    await b.sync()
    assert await redis.hgetall(key) == {}  # type: ignore[misc]
    assert a.open_providers(clocks.mono) == frozenset()  # due: a would probe too...
    assert a.try_acquire("fake", clocks.mono)
    await a.sync()  # ...but b's verdict closes it
    for _ in range(2):
        a.record_failure("fake", clocks.mono)
    assert a.try_acquire("fake", clocks.mono)  # closed: a fresh count of failures


async def test_a_failed_probe_elsewhere_starts_a_fresh_cooldown_here(
    redis: Redis, key: str
) -> None:
    clocks = Clocks()
    a, b = _circuits(redis, key, clocks), _circuits(redis, key, clocks)
    _open(a, "fake", clocks.mono)
    await a.sync()
    await b.sync()
    clocks.advance(31.0)
    assert a.try_acquire("fake", clocks.mono)
    assert a.record_failure("fake", clocks.mono) is True  # a's probe failed: open again
    await a.sync()
    await b.sync()
    assert not b.try_acquire("fake", clocks.mono + 29.0)
    assert b.try_acquire("fake", clocks.mono + 30.0)


async def test_without_redis_the_circuits_are_per_process_logged_once_and_shared_on_return(
    key: str, proxy: tuple[TcpProxy, str], caplog: pytest.LogCaptureFixture
) -> None:
    forwarder, url = proxy
    clocks = Clocks()
    through_proxy, direct = redis_client(url), redis_client(str(REDIS))
    a, b = _circuits(through_proxy, key, clocks), _circuits(direct, key, clocks)
    try:
        forwarder.down()
        with caplog.at_level(logging.INFO, logger="gateway.circuits"):
            await a.sync()
            _open(a, "fake", clocks.mono)  # opens here all the same
            await a.sync()
            await a.sync()
            assert not a.try_acquire("fake", clocks.mono)
            assert a.shared is False
            down = [r for r in caplog.records if "does not answer" in r.getMessage()]
            assert len(down) == 1
            await b.sync()
            assert b.open_providers(clocks.mono) == frozenset()  # nothing reached Redis
            forwarder.up()
            await a.sync()  # what waited is written
            assert a.shared is True
            back = [r for r in caplog.records if "answers again" in r.getMessage()]
            assert len(back) == 1
        await b.sync()
        assert b.open_providers(clocks.mono) == frozenset({"fake"})
    finally:
        await direct.delete(key)
        await through_proxy.aclose()
        await direct.aclose()


async def test_start_adopts_what_is_open_already_and_stop_ends_the_sync_task(
    redis: Redis, key: str
) -> None:
    clocks = Clocks()
    a = _circuits(redis, key, clocks)
    _open(a, "fake", clocks.mono)
    await a.sync()
    late = _circuits(redis, key, clocks)
    await late.start()
    try:
        assert late.open_providers(clocks.mono) == frozenset({"fake"})
    finally:
        await late.stop()


async def test_fields_out_of_bounds_are_skipped_and_the_others_adopted(
    redis: Redis, key: str
) -> None:
    """``inf`` would refuse a provider forever (and its reopening time has no date); a
    name that is not UTF-8 ended the sync; an opening an hour ahead would outlast the
    cooldown. Each is skipped and counted; the valid field beside them is adopted."""
    clocks = Clocks()
    skipped = SkippedValues()
    b = RedisCircuits(
        redis, 3, 30.0, key=key, wall=clocks.wall, monotonic=clocks.monotonic, skipped=skipped
    )
    await redis.hset(  # type: ignore[misc]
        key,
        mapping={
            "inf": "inf",
            "nan": "nan",
            "ahead": repr(clocks.epoch + 3600),
            b"\xff\xfe": repr(clocks.epoch),
            "fake": repr(clocks.epoch - 1),
        },
    )
    await b.sync()
    assert b.open_providers(clocks.mono) == frozenset({"fake"})
    for provider in ("inf", "nan", "ahead"):
        assert b.reopens_at(provider) is None
    assert skipped.counts["circuits"] == 4
