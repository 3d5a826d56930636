"""Engine settings and the portable column types."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.engine import SQLITE_BUSY_TIMEOUT_MS, create_engine, describe_error
from gateway.db.tables import eval_results, usage_daily


async def test_sqlite_connections_use_wal_and_a_busy_timeout(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'g.db'}")
    try:
        async with engine.connect() as connection:
            journal = (await connection.execute(text("PRAGMA journal_mode"))).scalar()
            busy = (await connection.execute(text("PRAGMA busy_timeout"))).scalar()
    finally:
        await engine.dispose()
    assert journal == "wal"
    assert busy == SQLITE_BUSY_TIMEOUT_MS


async def test_timestamps_go_in_aware_and_come_back_aware_utc(engine: AsyncEngine) -> None:
    berlin = timezone(timedelta(hours=1))
    written = datetime(2026, 11, 29, 13, 0, 0, 123456, tzinfo=berlin)
    row = {
        "set_id": "s",
        "provider": "p",
        "model": "m",
        "prompt_count": 1,
        "passed_count": 1,
        "mean_score": 1.0,
        "run_at": written,
    }
    async with engine.begin() as connection:
        await connection.execute(eval_results.insert(), [row])
        read = (await connection.execute(select(eval_results.c.run_at))).scalar_one()
    assert read.tzinfo is not None
    assert read.utcoffset() == timedelta(0)
    assert read == written  # the same instant, microseconds kept


async def test_money_keeps_ten_decimal_places(engine: AsyncEngine) -> None:
    day = datetime(2026, 11, 29, tzinfo=UTC).date()
    async with engine.begin() as connection:
        await connection.execute(
            usage_daily.insert(), [{"day": day, "cost": Decimal("0.0000001234")}]
        )
        cost = (await connection.execute(select(usage_daily.c.cost))).scalar_one()
    assert cost == Decimal("0.0000001234")


def test_described_errors_are_one_line_without_parameters() -> None:
    error = RuntimeError("boom\n[SQL: INSERT ...]\n[parameters: ('secret',)]")
    assert describe_error(error) == "RuntimeError: boom"
