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


async def test_sqlite_writes_a_batch_of_rows_in_one_statement(tmp_path: Path) -> None:
    """An executemany of many rows (the telemetry writer's batch) is one multi-row INSERT
    on SQLite, and every row lands once."""
    from sqlalchemy import event, func

    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'g.db'}")
    statements: list[tuple[str, bool]] = []

    def seen(
        conn: object, cursor: object, sql: str, params: object, ctx: object, many: bool
    ) -> None:
        if sql.startswith("INSERT"):
            statements.append((sql, many))

    event.listen(engine.sync_engine, "before_cursor_execute", seen)
    rows = [
        {
            "set_id": f"s{i}",
            "provider": "p",
            "model": "m",
            "prompt_count": 1,
            "passed_count": 1,
            "mean_score": 1.0,
            "run_at": datetime.now(UTC),
        }
        for i in range(300)
    ]
    try:
        async with engine.begin() as connection:
            await connection.run_sync(eval_results.create, checkfirst=True)
            await connection.execute(eval_results.insert(), rows)
            count = (
                await connection.execute(select(func.count()).select_from(eval_results))
            ).scalar()
    finally:
        await engine.dispose()
    assert count == 300
    ((sql, _),) = statements  # one statement holding every row
    assert sql.count("), (") == len(rows) - 1


async def test_a_sqlite_file_keeps_a_fixed_pool_and_opens_no_connection_beyond_it(
    tmp_path: Path,
) -> None:
    """Twenty callers at once, three times over: the pool opens SQLITE_POOL_SIZE
    connections once and keeps them (SQLAlchemy's default overflow opened and closed a
    connection, with its thread, for each busy moment)."""
    import asyncio

    from sqlalchemy import event

    from gateway.db.engine import SQLITE_POOL_SIZE

    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'g.db'}")
    opened: list[object] = []
    event.listen(engine.sync_engine, "connect", lambda conn, record: opened.append(conn))
    busiest = 0
    holding = 0

    async def call() -> None:
        nonlocal busiest, holding
        async with engine.connect() as connection:
            holding += 1
            busiest = max(busiest, holding)
            await connection.execute(text("SELECT 1"))
            await asyncio.sleep(0.01)
            holding -= 1

    try:
        for _ in range(3):
            await asyncio.gather(*(call() for _ in range(20)))
    finally:
        await engine.dispose()
    assert busiest == SQLITE_POOL_SIZE
    assert len(opened) == SQLITE_POOL_SIZE


def test_an_in_memory_sqlite_database_keeps_its_single_shared_connection() -> None:
    from sqlalchemy.pool import StaticPool

    engine = create_engine("sqlite+aiosqlite://")
    assert isinstance(engine.sync_engine.pool, StaticPool)
