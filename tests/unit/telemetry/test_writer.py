"""The background writer: batches, usage_daily increments, outages, drops, retention."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db import migrate
from gateway.db.engine import create_engine
from gateway.db.tables import telemetry, usage_daily
from gateway.telemetry.retention import Retention
from gateway.telemetry.writer import MAX_PIECE, TelemetryWriter, WriterSettings, pieces
from tests.unit.telemetry.factory import NOW, make_record


async def _rows(engine: AsyncEngine, table: Any) -> list[Any]:
    async with engine.connect() as connection:
        return list((await connection.execute(select(table))).mappings().all())


async def _count(engine: AsyncEngine) -> int:
    async with engine.connect() as connection:
        return int(
            (await connection.execute(select(func.count()).select_from(telemetry))).scalar_one()
        )


async def test_a_batch_writes_every_row_with_flags_as_zero_or_one(engine: AsyncEngine) -> None:
    writer = TelemetryWriter(engine)
    await writer.start()
    for index in range(3):
        writer.submit(make_record(request_id=f"r{index}", cache_hit=index == 2))
    await writer.flush()
    await writer.stop()
    rows = sorted(await _rows(engine, telemetry), key=lambda row: row["correlation_id"])
    assert [row["correlation_id"] for row in rows] == ["r0", "r1", "r2"]
    assert [row["cache_hit"] for row in rows] == [0, 0, 1]
    assert rows[0]["success"] == 1
    assert rows[0]["created_at"] == NOW
    assert writer.written == 3
    assert writer.dropped == 0


async def test_two_batches_on_one_usage_key_sum_up_exactly(engine: AsyncEngine) -> None:
    writer = TelemetryWriter(engine, WriterSettings(batch_size=2))
    costs = [Decimal("0.0067"), Decimal("0.0184"), Decimal("0.0000000001")]
    for cost in costs:
        writer.submit(make_record(actual_input_tokens=10, actual_output_tokens=5, actual_cost=cost))
    writer.submit(make_record(estimated_cost=Decimal("0.25"), usage_source="estimated"))
    await writer.flush()  # not started: writes inline, two batches of two
    [row] = await _rows(engine, usage_daily)
    assert row["day"] == NOW.date()
    assert (row["api_key_id"], row["configuration"], row["operation"]) == (
        "alice",
        "smart-chat",
        "chat",
    )
    assert (row["provider"], row["model"]) == ("openai-main", "gpt-4o-mini")
    assert row["requests"] == 4
    assert (row["input_tokens"], row["output_tokens"]) == (30, 15)
    assert row["cost"] == sum(costs)
    assert row["estimated_cost"] == Decimal("0.25")


async def test_usage_daily_names_the_served_model_and_skips_unanswered_calls(
    engine: AsyncEngine,
) -> None:
    writer = TelemetryWriter(engine)
    writer.submit(make_record(served_provider="backup", served_model="backup-model"))
    writer.submit(
        make_record(success=False, served_provider=None, served_model=None, http_status=502)
    )
    writer.submit(make_record(api_key_id=None, operation="embedding"))
    await writer.flush()
    rows = await _rows(engine, usage_daily)
    keys = sorted((r["api_key_id"], r["provider"], r["model"], r["operation"]) for r in rows)
    assert keys == [
        ("", "openai-main", "gpt-4o-mini", "embedding"),
        ("alice", "backup", "backup-model", "chat"),
    ]
    assert await _count(engine) == 3


async def test_disabled_writer_writes_nothing(engine: AsyncEngine) -> None:
    writer = TelemetryWriter(engine, WriterSettings(enabled=False))
    await writer.start()
    writer.submit(make_record())
    await writer.flush()
    await writer.stop()
    assert writer.queue_depth == 0
    assert await _count(engine) == 0


async def test_a_full_queue_drops_and_counts_without_raising(engine: AsyncEngine) -> None:
    writer = TelemetryWriter(engine, WriterSettings(max_queue=3))
    for _ in range(5):
        writer.submit(make_record())
    assert writer.queue_depth == 3
    assert writer.dropped == 2
    await writer.flush()
    assert await _count(engine) == 3


async def test_stop_writes_everything_still_queued(engine: AsyncEngine) -> None:
    writer = TelemetryWriter(engine, WriterSettings(flush_interval=30.0, batch_size=1000))
    await writer.start()
    for _ in range(7):
        writer.submit(make_record())
    await writer.stop()
    assert await _count(engine) == 7
    assert writer.written == 7


async def test_strings_longer_than_their_column_are_cut_not_fatal(engine: AsyncEngine) -> None:
    writer = TelemetryWriter(engine)
    writer.submit(make_record(request_id="x" * 500))
    await writer.flush()
    [row] = await _rows(engine, telemetry)
    assert row["correlation_id"] == "x" * 128
    assert writer.dropped == 0


async def _rename(engine: AsyncEngine, old: str, new: str) -> None:
    async with engine.begin() as connection:
        await connection.execute(text(f"ALTER TABLE {old} RENAME TO {new}"))


async def test_rows_arrive_after_a_database_outage(engine: AsyncEngine) -> None:
    writer = TelemetryWriter(engine, WriterSettings(retry_delay=0.05, retry_attempts=50))
    await _rename(engine, "telemetry", "telemetry_away")  # every insert now fails
    try:
        await writer.start()
        writer.submit(make_record())
        for _ in range(200):
            if writer.failed_batches >= 2:
                break
            await asyncio.sleep(0.01)
        assert writer.failed_batches >= 2
    finally:
        await _rename(engine, "telemetry_away", "telemetry")
    await writer.flush()
    await writer.stop()
    assert await _count(engine) == 1
    assert (writer.written, writer.dropped) == (1, 0)


async def test_a_batch_is_dropped_and_counted_after_its_last_retry(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}")  # no tables yet
    try:
        writer = TelemetryWriter(engine, WriterSettings(retry_delay=0.001, retry_attempts=3))
        await writer.start()
        writer.submit(make_record())
        writer.submit(make_record())
        await writer.flush()
        assert (writer.written, writer.dropped, writer.failed_batches) == (0, 2, 3)
        await engine.dispose()
        migrate.upgrade(f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}")  # the database is back
        writer.submit(make_record())
        await writer.flush()
        await writer.stop()
        assert writer.written == 1
    finally:
        await engine.dispose()


async def test_retention_purge_deletes_only_rows_past_retention(engine: AsyncEngine) -> None:
    writer = TelemetryWriter(engine)
    writer.submit(make_record(request_id="old", created_at=NOW - timedelta(days=91)))
    writer.submit(make_record(request_id="kept", created_at=NOW - timedelta(days=89)))
    await writer.flush()
    assert await Retention(engine, 90, clock=lambda: NOW).purge_now() == 1
    assert [row["correlation_id"] for row in await _rows(engine, telemetry)] == ["kept"]


async def test_start_purges_once_straight_away(engine: AsyncEngine) -> None:
    writer = TelemetryWriter(engine)
    writer.submit(make_record(created_at=NOW - timedelta(days=2)))
    await writer.flush()
    retention = Retention(engine, 1, clock=lambda: NOW)
    await retention.start()
    for _ in range(200):
        if retention.purged:
            break
        await asyncio.sleep(0.01)
    await retention.stop()
    assert retention.purged == 1
    assert await _count(engine) == 0


def test_a_batch_goes_in_pieces_of_a_few_sizes_each_row_once() -> None:
    for count in (0, 1, 2, 3, 7, 255, 256, 500, 1000):
        rows = [{"n": index} for index in range(count)]
        split = pieces(rows)
        assert [row for piece in split for row in piece] == rows  # each row once, in order
        sizes = [len(piece) for piece in split]
        assert all(size & (size - 1) == 0 for size in sizes)  # powers of two
        assert all(size <= MAX_PIECE for size in sizes)
        rest = [size for size in sizes if size < MAX_PIECE]
        assert sizes == [MAX_PIECE] * (len(sizes) - len(rest)) + rest  # whole pieces first
        assert rest == sorted(set(rest), reverse=True)  # then each smaller size at most once


async def test_batches_of_many_sizes_prepare_a_few_statements(tmp_path: Path) -> None:
    """SQLite keeps every statement it has prepared (about a megabyte for hundreds of
    rows): batches of 1 to 300 rows use only the six statement shapes of 1 to 32 rows."""
    from sqlalchemy import event

    url = f"sqlite+aiosqlite:///{tmp_path / 'g.db'}"
    migrate.upgrade(url)
    engine = create_engine(url)
    shapes: set[str] = set()

    def seen(*args: Any) -> None:
        sql: str = args[2]
        if sql.startswith("INSERT INTO telemetry "):
            shapes.add(sql)

    event.listen(engine.sync_engine, "before_cursor_execute", seen)
    writer = TelemetryWriter(engine, WriterSettings(batch_size=1000))
    try:
        for size in range(1, 301, 7):
            for index in range(size):
                writer.submit(make_record(request_id=f"{size}-{index}"))
            await writer.flush()
        assert await _count(engine) == sum(range(1, 301, 7))
    finally:
        await writer.stop()
        await engine.dispose()
    assert len(shapes) <= MAX_PIECE.bit_length()  # 1, 2, 4, 8, 16, 32


async def test_one_row_the_database_refuses_costs_only_that_row(engine: AsyncEngine) -> None:
    """10**19 fits no BIGINT column: its row is set aside at once, every other row of the
    batch (and its usage_daily increments) is written, and the drop is counted."""
    writer = TelemetryWriter(engine, WriterSettings(retry_delay=30.0, retry_attempts=2))
    for index in range(9):
        tokens = 10**19 if index == 6 else 10
        writer.submit(make_record(request_id=f"r{index}", actual_input_tokens=tokens))
    await writer.flush()  # a retry would sleep 30 s: a refused value is never retried
    rows = await _rows(engine, telemetry)
    assert sorted(row["correlation_id"] for row in rows) == [f"r{i}" for i in range(9) if i != 6]
    assert (writer.written, writer.dropped, writer.rejected) == (8, 1, 1)
    [daily] = await _rows(engine, usage_daily)
    assert (daily["requests"], daily["input_tokens"]) == (8, 80)
