"""The pipeline's ResponseCache: keys, TTLs, and failures that never fail a call.

A store that errors (database or Redis down) is logged and treated as a miss;
after a failure it is left alone for a few seconds, so a dead store costs one
timeout per interval rather than one per call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.cache.database import DatabaseCacheStore
from gateway.cache.keys import cache_key
from gateway.db.engine import describe_error
from gateway.db.redis_values import SkippedValues
from gateway.domain.model import Configuration
from gateway.domain.settings import CacheStoreSettings
from gateway.hooks import CachedAnswer
from gateway.inbound import InboundRequest
from gateway.tasks import Supervisor, cancel_and_wait

log = logging.getLogger(__name__)

PURGE_INTERVAL_SECONDS = 300.0
BACKOFF_SECONDS = 5.0


class CacheStore(Protocol):
    async def get(self, key: str) -> CachedAnswer | None: ...
    async def put(self, key: str, answer: CachedAnswer, ttl_seconds: int) -> None: ...
    async def purge(self) -> int: ...
    async def close(self) -> None: ...


def make_store(
    settings: CacheStoreSettings, engine: AsyncEngine, skipped: SkippedValues | None = None
) -> CacheStore:
    if settings.store == "redis" and settings.redis_url:
        # Imported only when used: the Redis client is ~6 MB a process that uses no Redis.
        from gateway.cache.redis_store import RedisCacheStore

        return RedisCacheStore(settings.redis_url, skipped)
    return DatabaseCacheStore(engine)


class StoredResponseCache:
    def __init__(
        self,
        store: CacheStore,
        *,
        fingerprints: Mapping[str, str] | None = None,
        purge_interval_seconds: float = PURGE_INTERVAL_SECONDS,
        backoff_seconds: float = BACKOFF_SECONDS,
        tasks: Supervisor | None = None,
    ) -> None:
        self.backend = store
        self._tasks = tasks or Supervisor()
        self._fingerprints = fingerprints or {}
        self._interval = purge_interval_seconds
        self._backoff = backoff_seconds
        self._down_until = 0.0
        self._task: asyncio.Task[None] | None = None

    def with_fingerprints(self, fingerprints: Mapping[str, str]) -> StoredResponseCache:
        """The same store keyed by another configuration's fingerprints (a reload); the
        purge loop stays this one's."""
        twin = StoredResponseCache(
            self.backend,
            fingerprints=fingerprints,
            purge_interval_seconds=self._interval,
            backoff_seconds=self._backoff,
            tasks=self._tasks,
        )
        return twin

    async def lookup(
        self, configuration: Configuration, request: InboundRequest, key_id: str | None
    ) -> CachedAnswer | None:
        if configuration.cache is None or self._resting():
            return None
        try:
            return await self.backend.get(self._key(configuration, request, key_id))
        except Exception as error:  # a cache must never fail a call
            self._failed("lookup", error)
            return None

    async def store(
        self,
        configuration: Configuration,
        request: InboundRequest,
        key_id: str | None,
        answer: CachedAnswer,
    ) -> None:
        spec = configuration.cache
        if spec is None or spec.ttl_seconds <= 0 or self._resting():
            return
        key = self._key(configuration, request, key_id)
        try:
            await self.backend.put(key, answer, spec.ttl_seconds)
        except Exception as error:  # a cache must never fail a call
            self._failed("store", error)

    async def start(self) -> None:
        if self._task is None:
            self._task = self._tasks.spawn("response-cache-purge", self._loop)

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)
        with contextlib.suppress(Exception):
            await self.backend.close()

    def _key(
        self, configuration: Configuration, request: InboundRequest, key_id: str | None
    ) -> str:
        fingerprint = self._fingerprints.get(configuration.id, configuration.id)
        scoped = configuration.cache is not None and configuration.cache.scope == "key"
        return cache_key(fingerprint, request, (key_id or "") if scoped else None)

    def _resting(self) -> bool:
        return time.monotonic() < self._down_until

    def _failed(self, action: str, error: Exception) -> None:
        self._down_until = time.monotonic() + self._backoff
        log.warning(
            "response cache %s failed (answering without the cache for %.0fs): %s",
            action,
            self._backoff,
            describe_error(error),
        )

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            try:
                await self.backend.purge()
            except Exception as error:  # the next round tries again
                log.warning("response cache purge failed: %s", describe_error(error))
