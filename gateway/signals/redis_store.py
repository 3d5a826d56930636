"""Signal readings shared through Redis (``redis.url``): one read per period for every
worker and replica (docs/operations.md, "What is shared between processes").

Each reading is one key holding msgpack, ``gateway:signals:<signal>:<fingerprint>``:
the fingerprint digests the settings that may shape the read (health, routing,
telemetry), so processes with different settings never take each other's figures. The
lease is a Redis lock (``SET NX PX`` with a token, released only by its holder):
``gateway:signals:<signal>:lease``.

A reading that does not decode, or is dated later than now plus the clock skew allowed
(gateway.db.redis_values), is skipped and counted: it reads as no reading (the process
reads the database itself), and the store still counts as answering.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from typing import TypeVar

import msgspec
from redis.asyncio import Redis

from gateway.db.redis_values import SkippedValues, taken_within
from gateway.domain import GatewayConfig, HealthSample, HistoryFigures, Operation
from gateway.domain.clock import utc_now
from gateway.signals.refresher import HealthMap, HistoryMap, QualityMap, SignalReading

PREFIX = "gateway:signals:"
EXPIRY_SECONDS = 3600  # a reading is taken only while younger than its period anyway


# The domain's own dataclasses are encoded field by field (msgspec reads their fields),
# so a field added to HealthSample or HistoryFigures travels without a change here.
_HealthRow = tuple[str, HealthSample]
_QualityRow = tuple[str, str, float]
_HistoryRow = tuple[str, str, Operation, HistoryFigures]


class _HealthStored(msgspec.Struct, array_like=True):
    taken_at: datetime
    rows: list[_HealthRow]


class _QualityStored(msgspec.Struct, array_like=True):
    taken_at: datetime
    rows: list[_QualityRow]


class _HistoryStored(msgspec.Struct, array_like=True):
    taken_at: datetime
    rows: list[_HistoryRow]


_Stored = TypeVar("_Stored", _HealthStored, _QualityStored, _HistoryStored)

_ENCODER = msgspec.msgpack.Encoder()
_HEALTH = msgspec.msgpack.Decoder(_HealthStored)
_QUALITY = msgspec.msgpack.Decoder(_QualityStored)
_HISTORY = msgspec.msgpack.Decoder(_HistoryStored)


def settings_fingerprint(config: GatewayConfig) -> str:
    """A short digest of every setting that may shape a signal's read (the health window,
    the routing section's history settings, telemetry on or off): processes whose settings
    differ never take each other's readings."""
    shaping = {
        "health": dataclasses.asdict(config.health),
        "routing": dataclasses.asdict(config.routing),
        "telemetry": dataclasses.asdict(config.telemetry),
    }
    text = json.dumps(shaping, sort_keys=True, default=_canonical)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _canonical(value: object) -> object:
    if isinstance(value, set | frozenset):
        return sorted(str(item) for item in value)
    return str(value)


class RedisSignalStore:
    def __init__(
        self,
        redis: Redis,
        config: GatewayConfig,
        *,
        prefix: str = PREFIX,
        skipped: SkippedValues | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._redis = redis
        self._skipped = skipped or SkippedValues()
        self._clock = clock
        self._prefix = prefix
        fingerprint = settings_fingerprint(config)
        self._health_key = f"{prefix}health:{fingerprint}"
        self._quality_key = f"{prefix}quality"
        self._history_key = f"{prefix}history:{fingerprint}"

    async def get_health(self) -> SignalReading[HealthMap] | None:
        stored = self._usable("health", await self._get(self._health_key), _HEALTH)
        if stored is None:
            return None
        return SignalReading(dict(stored.rows), stored.taken_at)

    async def set_health(self, reading: SignalReading[HealthMap]) -> None:
        rows = list(reading.value.items())
        await self._put(self._health_key, _HealthStored(reading.taken_at, rows))

    async def get_quality(self) -> SignalReading[QualityMap] | None:
        stored = self._usable("quality", await self._get(self._quality_key), _QUALITY)
        if stored is None:
            return None
        return SignalReading({(p, m): score for p, m, score in stored.rows}, stored.taken_at)

    async def set_quality(self, reading: SignalReading[QualityMap]) -> None:
        rows = [(p, m, score) for (p, m), score in reading.value.items()]
        await self._put(self._quality_key, _QualityStored(reading.taken_at, rows))

    async def get_history(self) -> SignalReading[HistoryMap] | None:
        stored = self._usable("history", await self._get(self._history_key), _HISTORY)
        if stored is None:
            return None
        value = {(p, m, op): figures for p, m, op, figures in stored.rows}
        return SignalReading(value, stored.taken_at)

    async def set_history(self, reading: SignalReading[HistoryMap]) -> None:
        rows = [(p, m, op, figures) for (p, m, op), figures in reading.value.items()]
        await self._put(self._history_key, _HistoryStored(reading.taken_at, rows))

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

    def _usable(
        self, signal: str, raw: bytes | None, decoder: msgspec.msgpack.Decoder[_Stored]
    ) -> _Stored | None:
        """The stored reading, or None when there is none or it cannot be used."""
        if raw is None:
            return None
        try:
            stored = decoder.decode(raw)
        except msgspec.DecodeError as error:  # ValidationError included
            self._skipped.skip(f"signals:{signal}", f"undecodable: {error}")
            return None
        if not taken_within(stored.taken_at, self._clock()):
            self._skipped.skip(f"signals:{signal}", "dated in the future")
            return None
        return stored

    async def _get(self, key: str) -> bytes | None:
        raw = await self._redis.get(key)
        return raw.encode() if isinstance(raw, str) else raw

    async def _put(self, key: str, stored: msgspec.Struct) -> None:
        await self._redis.set(key, _ENCODER.encode(stored), ex=EXPIRY_SECONDS)
