"""The response cache in Redis (``cache: {store: redis, redisUrl: ...}``).

Each answer is one key with Redis's own expiry (``SET ... EX ttl``), so nothing
needs purging. Socket timeouts are short: a slow Redis costs a miss, not a call. An
entry that does not decode is a miss: it is deleted (the answer is stored again) and
counted (gateway.db.redis_values), and the cache goes on for every other entry.
"""

from __future__ import annotations

import msgspec
from redis.asyncio import Redis

from gateway.db.redis_values import SkippedValues
from gateway.hooks import CachedAnswer

KEY_PREFIX = "gateway:cache:"
SOCKET_TIMEOUT_SECONDS = 0.5


class _Stored(msgspec.Struct, array_like=True):
    body: bytes
    response_model: str | None


_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(_Stored)


class RedisCacheStore:
    def __init__(self, url: str, skipped: SkippedValues | None = None) -> None:
        self._skipped = skipped or SkippedValues()
        self._redis = Redis.from_url(
            url,
            socket_timeout=SOCKET_TIMEOUT_SECONDS,
            socket_connect_timeout=SOCKET_TIMEOUT_SECONDS,
        )

    async def get(self, key: str) -> CachedAnswer | None:
        raw = await self._redis.get(KEY_PREFIX + key)
        if raw is None:
            return None
        try:
            stored = _DECODER.decode(raw.encode() if isinstance(raw, str) else raw)
        except msgspec.DecodeError as error:  # ValidationError included
            self._skipped.skip("cache", f"undecodable: {error}")
            await self._redis.delete(KEY_PREFIX + key)
            return None
        return CachedAnswer(stored.body, stored.response_model)

    async def put(self, key: str, answer: CachedAnswer, ttl_seconds: int) -> None:
        value = _ENCODER.encode(_Stored(answer.body, answer.response_model))
        await self._redis.set(KEY_PREFIX + key, value, ex=max(ttl_seconds, 1))

    async def purge(self) -> int:
        return 0  # Redis expires keys itself

    async def close(self) -> None:
        await self._redis.aclose()
