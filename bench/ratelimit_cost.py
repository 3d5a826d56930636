"""What a rate limit costs a call: the in-process ASGI harness of bench/inprocess.py, one
fixed-mode call after another, with no limit, with a key limit counted in process, and
with the same limit counted in Redis (one Lua script per check; a second one at the end
when the call holds tokens or a slot). The limits are never reached.

Prints µs per call (wall time of the serving loop, so Redis's round trips count) for each
variant, the median of interleaved rounds (every variant's app runs all along, so each
meets the same background load), and the limiter's own check alone (admit + settle) in
process and in Redis.

    python bench/ratelimit_cost.py [--calls 1000] [--rounds 5] [--redis-url URL]

Without ``--redis-url`` (or ``GATEWAY_TEST_REDIS_URL``) the Redis variants are skipped.
The Redis database named is written to (keys ``gateway:*``) and its rate-limit keys of
the bench's key are deleted at the end: give it a database of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

from gateway.api.app import create_app
from gateway.config.loader import load_config_text
from gateway.db.migrate import upgrade
from gateway.domain.limits import RateLimit
from gateway.limits.decisions import Scope
from gateway.limits.local import InProcessLimiter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_config import KEY, bench_config
from inprocess import _lifespan, call, upstream

HIGH = 10**9
REQUESTS = f"{{requestsPerMinute: {HIGH}}}"
EVERYTHING = f"{{requestsPerMinute: {HIGH}, tokensPerMinute: {HIGH}, concurrent: {HIGH}}}"


def _config(db: str, limit: str | None, redis_url: str | None) -> str:
    text = bench_config(db, "http://upstream.invalid")
    if limit is not None:
        text = text.replace(
            f'keys: [{{id: bench, key: "{KEY}"}}]',
            f'keys: [{{id: bench, key: "{KEY}", rateLimit: {limit}}}]',
        )
    if redis_url is not None:
        text += f'redis: {{url: "{redis_url}"}}\n'
    return text


class _Served:
    """One variant's app, started once and called in every round."""

    def __init__(self, config_text: str) -> None:
        config = load_config_text(config_text)
        upgrade(config.database.url)
        self.app = create_app(config, transport=httpx.MockTransport(upstream))
        self._startup, self._shutdown = asyncio.Event(), asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(_lifespan(self.app, self._startup, self._shutdown))
        await self._startup.wait()
        for _ in range(300):
            assert await call(self.app, BODY) == 200

    async def micros(self, calls: int) -> float:
        start = time.perf_counter()
        for _ in range(calls):
            await call(self.app, BODY)
        return (time.perf_counter() - start) / calls * 1e6

    async def stop(self) -> None:
        self._shutdown.set()
        if self._task is not None:
            await self._task


BODY = json.dumps({"model": "fixed", "messages": [{"role": "user", "content": "Say ok."}]}).encode()


async def _checks(redis_url: str | None, rounds: int) -> dict[str, float]:
    """The limiter alone: one admit and one settle of a call held to every measure."""
    scope = Scope("key", "bench-check", RateLimit(HIGH, HIGH, HIGH))
    found: dict[str, float] = {}
    local = InProcessLimiter(lease_ms=660_000)
    start = time.perf_counter()
    for _ in range(rounds):
        _, ticket = await local.admit([scope], 100)
        assert ticket is not None
        await local.settle(ticket, 50)
    found["in process"] = (time.perf_counter() - start) / rounds * 1e6
    if redis_url is None:
        return found
    from gateway.db.redis_client import redis_client
    from gateway.limits.redis_limiter import RedisLimiter

    client = redis_client(redis_url)
    limiter = RedisLimiter(client, local, lease_ms=660_000, prefix="bench:rl:")
    try:
        for requests_only in (True, False):
            limit = RateLimit(HIGH) if requests_only else RateLimit(HIGH, HIGH, HIGH)
            measured = Scope("key", f"bench-check-{requests_only}", limit)
            start = time.perf_counter()
            for _ in range(rounds):
                _, ticket = await limiter.admit([measured], 100)
                assert ticket is not None and not ticket.local
                if ticket.settles:
                    await limiter.settle(ticket, 50)
            label = "Redis, requests only" if requests_only else "Redis, all three + settle"
            found[label] = (time.perf_counter() - start) / rounds * 1e6
    finally:
        keys = [k async for k in client.scan_iter(match="bench:rl:*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()
    return found


async def _clean(redis_url: str) -> None:
    from gateway.db.redis_client import redis_client

    client = redis_client(redis_url)
    try:
        keys = [k async for k in client.scan_iter(match="gateway:rl:key:bench:*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


async def run(calls: int, rounds: int, redis_url: str | None) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="gateway-ratelimit-"))
    variants: list[tuple[str, str | None, str | None]] = [
        ("no limit", None, None),
        ("in process, requestsPerMinute", REQUESTS, None),
        ("in process, all three", EVERYTHING, None),
    ]
    if redis_url is not None:
        variants += [
            ("Redis configured, no limit", None, redis_url),
            ("Redis, requestsPerMinute", REQUESTS, redis_url),
            ("Redis, all three", EVERYTHING, redis_url),
        ]
    print(
        "conditions: in-process ASGI calls, MockTransport upstream, telemetry on (SQLite), "
        f"fixed mode, {rounds} interleaved rounds of {calls} calls per variant (median "
        "shown), limits never reached"
        + (f", Redis at {redis_url.rsplit('@', 1)[-1]}" if redis_url else ", no Redis")
    )
    served = [
        _Served(_config(str(tmp / f"b{index}.db"), limit, url))
        for index, (_, limit, url) in enumerate(variants)
    ]
    figures: list[list[float]] = [[] for _ in variants]
    try:
        for one in served:
            await one.start()
        for _ in range(rounds):
            for index, one in enumerate(served):
                figures[index].append(await one.micros(calls))
    finally:
        for one in served:
            await one.stop()
        if redis_url is not None:
            await _clean(redis_url)
    for (name, _, _), found in zip(variants, figures, strict=True):
        print(f"  {name:32} {statistics.median(found):8.1f} µs per call")
    print("the limiter alone (admit + settle of one scope):")
    for name, micros in (await _checks(redis_url, calls)).items():
        print(f"  {name:32} {micros:8.1f} µs per check")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--redis-url", default=os.environ.get("GATEWAY_TEST_REDIS_URL"))
    args = parser.parse_args()
    asyncio.run(run(args.calls, args.rounds, args.redis_url))


if __name__ == "__main__":
    main()
