"""Readiness: can the database answer now?"""

from __future__ import annotations

import asyncio

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

PROBE_SECONDS = 2.0


async def database_ready(engine: AsyncEngine) -> bool:
    try:
        async with asyncio.timeout(PROBE_SECONDS), engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
    except Exception:  # any failure means "not ready"
        return False
    return True
