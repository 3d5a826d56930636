"""Console sign-outs in the database (gateway.db.console_sessions) on every dialect: listed
until they expire, a second sign-out of one session changes nothing, each sign-out
deletes the expired rows, and an unreachable database is a SessionCheckFailed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.console_sessions import SessionRevocations
from gateway.db.console_tables import console_revoked_sessions as revoked
from gateway.db.engine import create_engine
from gateway.domain.errors import SessionCheckFailed

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


async def _ids(engine: AsyncEngine) -> list[str]:
    async with engine.connect() as connection:
        rows = await connection.execute(select(revoked.c.session_id).order_by("session_id"))
        return list(rows.scalars())


async def test_a_revoked_session_is_listed_once_and_expired_ones_are_pruned(
    engine: AsyncEngine,
) -> None:
    store = SessionRevocations(engine)
    assert not await store.is_revoked("s1")
    await store.revoke("s1", NOW + timedelta(minutes=5), NOW)
    await store.revoke("s1", NOW + timedelta(minutes=5), NOW)  # twice: still one row
    await store.revoke("s2", NOW + timedelta(hours=1), NOW)
    assert await store.is_revoked("s1") and await store.is_revoked("s2")
    assert not await store.is_revoked("s3")
    assert await _ids(engine) == ["s1", "s2"]
    # Ten minutes on, s1 has expired: the next sign-out deletes its row.
    await store.revoke("s3", NOW + timedelta(hours=1), NOW + timedelta(minutes=10))
    assert await _ids(engine) == ["s2", "s3"]


async def test_an_unreachable_database_is_a_session_check_failure() -> None:
    engine = create_engine("sqlite+aiosqlite:////nonexistent-dir/gateway.db")
    store = SessionRevocations(engine)
    try:
        with pytest.raises(SessionCheckFailed):
            await store.is_revoked("s1")
        with pytest.raises(SessionCheckFailed):
            await store.revoke("s1", NOW, NOW)
    finally:
        await engine.dispose()
