"""The call-history read (docs/routing.md#call-history): population, key and figures."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.domain import HistoryFigures, Operation
from gateway.signals.history import call_history_query, read_call_history
from gateway.telemetry.records import TelemetryRecord
from gateway.telemetry.writer import TelemetryWriter
from tests.unit.telemetry.factory import NOW, make_record

KEY = ("openai-main", "gpt-4o-mini", Operation.CHAT)


async def _write(engine: AsyncEngine, records: list[TelemetryRecord]) -> None:
    writer = TelemetryWriter(engine)
    for record in records:
        writer.submit(record)
    await writer.flush()


async def test_population_is_first_attempt_uncached_successes_in_the_window(
    engine: AsyncEngine,
) -> None:
    await _write(
        engine,
        [
            make_record(latency_ms=100.0),
            make_record(latency_ms=300.0, created_at=NOW - timedelta(days=6, hours=23)),
            make_record(latency_ms=9000.0, fallback_attempts=1),  # a sibling rescued it
            make_record(latency_ms=9000.0, cache_hit=True),  # measures the cache
            make_record(latency_ms=9000.0, success=False, error_class="upstream_5xx"),
            make_record(latency_ms=9000.0, created_at=NOW - timedelta(days=7, seconds=1)),
        ],
    )
    history = await read_call_history(engine, 7, NOW)
    assert history == {
        KEY: HistoryFigures(calls=2, mean_latency_ms=200.0, costed_calls=0, mean_cost=None)
    }


async def test_costed_calls_count_only_rows_with_a_cost(engine: AsyncEngine) -> None:
    await _write(
        engine,
        [
            make_record(actual_cost=Decimal("0.0067")),
            make_record(actual_cost=Decimal("0.0184")),
            make_record(actual_cost=None),
        ],
    )
    figures = (await read_call_history(engine, 7, NOW))[KEY]
    assert (figures.calls, figures.costed_calls) == (3, 2)
    assert figures.mean_cost == Decimal("0.01255")


async def test_history_is_keyed_by_serving_provider_model_and_operation(
    engine: AsyncEngine,
) -> None:
    await _write(
        engine,
        [
            make_record(operation="chat", latency_ms=100.0),
            make_record(operation="tools", latency_ms=400.0),
            make_record(provider="primary", served_provider="local", served_model="llama"),
        ],
    )
    history = await read_call_history(engine, 7, NOW)
    assert {key: figures.mean_latency_ms for key, figures in history.items()} == {
        ("openai-main", "gpt-4o-mini", Operation.CHAT): 100.0,
        ("openai-main", "gpt-4o-mini", Operation.TOOLS): 400.0,
        ("local", "llama", Operation.CHAT): 100.0,
    }


async def test_rows_with_an_unknown_operation_are_skipped(engine: AsyncEngine) -> None:
    await _write(engine, [make_record(operation="audio"), make_record()])
    assert list(await read_call_history(engine, 7, NOW)) == [KEY]


async def _plan(engine: AsyncEngine, prefix: str, settings: list[str]) -> str:
    query = call_history_query(NOW - timedelta(days=7))
    async with engine.connect() as connection:
        for setting in settings:
            await connection.execute(text(setting))
        compiled = query.compile(connection.sync_engine, compile_kwargs={"literal_binds": True})
        rows = (await connection.execute(text(f"{prefix} {compiled}"))).all()
    return "\n".join(" ".join(str(part) for part in row) for row in rows)


PLAN_CHECKS: dict[str, tuple[str, list[str], tuple[str, ...]]] = {
    "sqlite": ("EXPLAIN QUERY PLAN", [], ("COVERING INDEX ix_telemetry_call_history",)),
    # Tiny tables are scanned whatever the indexes; forbid that to see the index chosen.
    "postgresql": (
        "EXPLAIN",
        ["SET enable_seqscan = off"],
        ("Index Only Scan using ix_telemetry_call_history",),
    ),
    "mysql": ("EXPLAIN", [], ("ix_telemetry_call_history", "Using index")),
}


async def test_the_history_read_is_answered_from_the_covering_index(engine: AsyncEngine) -> None:
    await _write(engine, [make_record()])
    prefix, settings, expected = PLAN_CHECKS[engine.dialect.name]
    plan = await _plan(engine, prefix, settings)
    for fragment in expected:
        assert fragment in plan


async def test_one_very_slow_call_does_not_move_the_p50(engine: AsyncEngine) -> None:
    records = [make_record(latency_ms=200.0) for _ in range(9)]
    records.append(make_record(latency_ms=60000.0))
    # Half the calls an hour back, in the rollup; the rest in the current hour's rows.
    records += [make_record(latency_ms=200.0, created_at=NOW - timedelta(hours=2))] * 9
    await _write(engine, records)
    mean = (await read_call_history(engine, 7, NOW + timedelta(minutes=5)))[KEY]
    p50 = (await read_call_history(engine, 7, NOW + timedelta(minutes=5), statistic="p50"))[KEY]
    p90 = (await read_call_history(engine, 7, NOW + timedelta(minutes=5), statistic="p90"))[KEY]
    assert mean.latency_ms == pytest.approx((18 * 200.0 + 60000.0) / 19)
    assert p50.latency_ms == p90.latency_ms == pytest.approx(197.403, rel=1e-5)
    assert (p50.statistic, p50.mean_latency_ms) == ("p50", mean.mean_latency_ms)


async def test_streams_are_ranked_by_time_to_first_token_unless_told_total(
    engine: AsyncEngine,
) -> None:
    records = [
        make_record(operation="stream", latency_ms=6000.0, time_to_first_token_ms=300.0),
        make_record(operation="stream", latency_ms=6000.0, time_to_first_token_ms=500.0),
        make_record(operation="chat", latency_ms=700.0, time_to_first_token_ms=700.0),
    ]
    await _write(engine, records)
    stream = ("openai-main", "gpt-4o-mini", Operation.STREAM)
    ttft = await read_call_history(engine, 7, NOW)
    total = await read_call_history(engine, 7, NOW, stream_latency="total")
    assert (ttft[stream].measure, ttft[stream].latency_ms) == ("ttft", 400.0)
    assert (ttft[stream].ttft_ms, ttft[stream].mean_latency_ms) == (400.0, 6000.0)
    assert (total[stream].measure, total[stream].latency_ms) == ("total", 6000.0)
    assert (ttft[KEY].measure, ttft[KEY].latency_ms) == ("total", 700.0)  # not a stream
