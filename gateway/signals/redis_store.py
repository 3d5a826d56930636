"""Signal snapshots shared through Redis (``redis.url``): one read per period for every
worker and replica (docs/operations.md, "What is shared between processes").

Each snapshot is one key holding msgpack, ``gateway:signals:<signal>:<parameters>``:
the parameters that shape the read (the health window, the history's days) are part of
the key, so processes with different settings never take each other's figures. The
lease is a Redis lock (``SET NX PX`` with a token, released only by its holder):
``gateway:signals:<signal>:lease``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import datetime
from decimal import Decimal

import msgspec
from redis.asyncio import Redis

from gateway.domain import GatewayConfig, HealthSample, HistoryFigures, Operation
from gateway.signals.cache import HealthMap, HistoryMap, QualityMap, Snapshot

PREFIX = "gateway:signals:"
EXPIRY_SECONDS = 3600  # a snapshot is taken only while younger than its period anyway


class _Health(msgspec.Struct, array_like=True):
    provider: str
    samples: int
    successes: int
    avg_latency_ms: float | None


class _Quality(msgspec.Struct, array_like=True):
    provider: str
    model: str
    score: float


class _History(msgspec.Struct, array_like=True):
    provider: str
    model: str
    operation: Operation
    calls: int
    mean_latency_ms: float | None
    costed_calls: int
    mean_cost: Decimal | None


class _HealthStored(msgspec.Struct, array_like=True):
    taken_at: datetime
    rows: list[_Health]


class _QualityStored(msgspec.Struct, array_like=True):
    taken_at: datetime
    rows: list[_Quality]


class _HistoryStored(msgspec.Struct, array_like=True):
    taken_at: datetime
    rows: list[_History]


_ENCODER = msgspec.msgpack.Encoder()
_HEALTH = msgspec.msgpack.Decoder(_HealthStored)
_QUALITY = msgspec.msgpack.Decoder(_QualityStored)
_HISTORY = msgspec.msgpack.Decoder(_HistoryStored)


class RedisSignalStore:
    def __init__(self, redis: Redis, config: GatewayConfig, *, prefix: str = PREFIX) -> None:
        self._redis = redis
        self._prefix = prefix
        self._health_key = f"{prefix}health:{config.health.window_seconds}"
        self._quality_key = f"{prefix}quality"
        self._history_key = f"{prefix}history:{config.routing.call_history_days}"

    async def get_health(self) -> Snapshot[HealthMap] | None:
        raw = await self._get(self._health_key)
        if raw is None:
            return None
        stored = _HEALTH.decode(raw)
        value = {
            row.provider: HealthSample(row.samples, row.successes, row.avg_latency_ms)
            for row in stored.rows
        }
        return Snapshot(value, stored.taken_at)

    async def set_health(self, snapshot: Snapshot[HealthMap]) -> None:
        rows = [
            _Health(provider, sample.samples, sample.successes, sample.avg_latency_ms)
            for provider, sample in snapshot.value.items()
        ]
        await self._put(self._health_key, _HealthStored(snapshot.taken_at, rows))

    async def get_quality(self) -> Snapshot[QualityMap] | None:
        raw = await self._get(self._quality_key)
        if raw is None:
            return None
        stored = _QUALITY.decode(raw)
        return Snapshot({(r.provider, r.model): r.score for r in stored.rows}, stored.taken_at)

    async def set_quality(self, snapshot: Snapshot[QualityMap]) -> None:
        rows = [_Quality(p, m, score) for (p, m), score in snapshot.value.items()]
        await self._put(self._quality_key, _QualityStored(snapshot.taken_at, rows))

    async def get_history(self) -> Snapshot[HistoryMap] | None:
        raw = await self._get(self._history_key)
        if raw is None:
            return None
        stored = _HISTORY.decode(raw)
        value = {
            (r.provider, r.model, r.operation): HistoryFigures(
                r.calls, r.mean_latency_ms, r.costed_calls, r.mean_cost
            )
            for r in stored.rows
        }
        return Snapshot(value, stored.taken_at)

    async def set_history(self, snapshot: Snapshot[HistoryMap]) -> None:
        rows = [
            _History(p, m, op, f.calls, f.mean_latency_ms, f.costed_calls, f.mean_cost)
            for (p, m, op), f in snapshot.value.items()
        ]
        await self._put(self._history_key, _HistoryStored(snapshot.taken_at, rows))

    @contextlib.asynccontextmanager
    async def lease(self, name: str, seconds: float) -> AsyncIterator[bool]:
        lock = self._redis.lock(
            f"{self._prefix}{name}:lease", timeout=seconds, blocking=False, thread_local=False
        )
        held = bool(await lock.acquire())
        try:
            yield held
        finally:
            if held:
                await lock.release()

    async def _get(self, key: str) -> bytes | None:
        raw = await self._redis.get(key)
        return raw.encode() if isinstance(raw, str) else raw

    async def _put(self, key: str, stored: msgspec.Struct) -> None:
        await self._redis.set(key, _ENCODER.encode(stored), ex=EXPIRY_SECONDS)
