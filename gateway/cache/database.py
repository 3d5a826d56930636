"""The response cache in the gateway's database (``response_cache``), the default store."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.budget_tables import response_cache
from gateway.db.upserts import insert_or_replace
from gateway.domain.clock import utc_now
from gateway.hooks import CachedAnswer

_t = response_cache.c


class DatabaseCacheStore:
    def __init__(self, engine: AsyncEngine, clock: Callable[[], datetime] = utc_now) -> None:
        self._engine = engine
        self._clock = clock
        self._dialect = engine.dialect.name

    async def get(self, key: str) -> CachedAnswer | None:
        """The live answer under ``key``; an expired row is a miss (the purge removes it)."""
        async with self._engine.connect() as connection:
            found = await connection.execute(
                select(_t.body, _t.response_model).where(
                    _t.cache_key == key, _t.expires_at > self._clock()
                )
            )
            row = found.first()
        if row is None:
            return None
        return CachedAnswer(bytes(row[0]), row[1])

    async def put(self, key: str, answer: CachedAnswer, ttl_seconds: int) -> None:
        values = {
            "cache_key": key,
            "body": answer.body,
            "response_model": answer.response_model,
            "expires_at": self._clock() + timedelta(seconds=ttl_seconds),
        }
        async with self._engine.begin() as connection:
            await connection.execute(self._upsert(values))

    async def purge(self) -> int:
        async with self._engine.begin() as connection:
            result = await connection.execute(
                delete(response_cache).where(_t.expires_at <= self._clock())
            )
        return int(result.rowcount or 0)

    async def close(self) -> None:
        return None  # the engine belongs to the runtime

    def _upsert(self, values: dict[str, Any]) -> Any:
        changed = {
            "body": values["body"],
            "response_model": values["response_model"],
            "expires_at": values["expires_at"],
        }
        return insert_or_replace(self._dialect, response_cache, values, ("cache_key",), changed)
