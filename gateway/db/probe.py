"""Readiness: can the database (and Redis, when ``redis.url`` is set) answer now?"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

if TYPE_CHECKING:
    from redis.asyncio import Redis

PROBE_SECONDS = 2.0


async def database_ready(engine: AsyncEngine) -> bool:
    try:
        async with asyncio.timeout(PROBE_SECONDS), engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
    except Exception:  # any failure means "not ready"
        return False
    return True


async def redis_ready(client: Redis) -> bool:
    try:
        async with asyncio.timeout(PROBE_SECONDS):
            await client.ping()
    except Exception:  # any failure means "not ready"
        return False
    return True
