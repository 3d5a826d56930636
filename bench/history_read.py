"""Benchmark: the call-history read (gateway.signals.history) over 1,000,000 telemetry rows.

Target: <= 250 ms on SQLite and PostgreSQL (the row read); bench/decision.py prints the
rollup-based reads against their <= 50 ms target.

    python bench/history_read.py [--rows 1000000] [--runs 5]

SQLite runs always (a temporary file). PostgreSQL runs when
GATEWAY_TEST_POSTGRES_URL is set and MariaDB when GATEWAY_TEST_MARIADB_URL is
set, each in a scratch database created and dropped here. Two layouts:

- ``all-in-window``: every row inside the 7-day window (the worst case: the
  read aggregates about 880,000 qualifying rows);
- ``90-day-retention``: rows spread evenly over 90 days (the default
  retention), so about 78,000 rows fall in the window.

Keys: 25 models over 4 providers x 6 operations (150 keys). About 5 % failures,
3 % fallbacks, 4 % cache hits, 9 % unpriced. "cold" is the first read on a new engine (new
connection; the OS page cache is warm from the insert), "warm" the next runs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gateway.db import migrate
from gateway.db.engine import create_engine
from gateway.signals.history import call_history_query, read_call_history
from gateway.telemetry.backfill import backfill_rollup_engine

NOW = datetime.now(UTC).replace(microsecond=0)
DAYS = 7
LAYOUTS = {"all-in-window": 7 * 86400 - 60, "90-day-retention": 90 * 86400}

# One INSERT ... SELECT per dialect; {n} rows, {span} seconds back from {now}.
COLUMNS = """created_at, correlation_id, operation, configuration, provider, adapter_type,
model, served_configuration, served_provider, served_model, success, http_status,
latency_ms, cache_hit, fallback_attempts, actual_cost, usage_source"""
VALUES = """'c', {operation}, 'cfg', {provider}, 'openai', {model}, 'cfg', {provider}, {model},
CASE WHEN x % 19 = 0 THEN 0 ELSE 1 END, 200, 50 + ({big} * 7919 % 10000),
CASE WHEN x % 23 = 0 THEN 1 ELSE 0 END, CASE WHEN x % 31 = 0 THEN 1 ELSE 0 END,
CASE WHEN x % 11 = 0 THEN NULL ELSE (x % 1000) / 100000.0 END, 'provider'"""
OPERATION = (
    "CASE x % 6 WHEN 0 THEN 'chat' WHEN 1 THEN 'tools' WHEN 2 THEN 'vision' "
    "WHEN 3 THEN 'stream' WHEN 4 THEN 'embedding' ELSE 'completion' END"
)


def _values(concat: str, big: str = "x") -> str:
    model = concat.format("'model-'", "x % 25")
    provider = concat.format("'prov-'", "x % 25 % 4")
    return VALUES.format(operation=OPERATION, provider=provider, model=model, big=big)


def insert_sql(dialect: str, n: int, span: int) -> str:
    step = span / n
    if dialect == "sqlite":
        back = f"'-' || CAST(x * {step} AS INTEGER) || ' seconds'"
        when = f"datetime('{NOW:%Y-%m-%d %H:%M:%S}', {back}) || '.000000'"
        return (
            f"WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < {n}) "
            f"INSERT INTO telemetry ({COLUMNS}) SELECT {when}, {_values('{0} || ({1})')} FROM g"
        )
    if dialect == "postgresql":
        when = f"TIMESTAMPTZ '{NOW.isoformat()}' - make_interval(secs => (x * {step})::int)"
        return (
            f"INSERT INTO telemetry ({COLUMNS}) SELECT {when}, "
            f"{_values('{0} || ({1})', 'x::bigint')} FROM generate_series(1, {n}) AS s(x)"
        )
    when = f"TIMESTAMP '{NOW:%Y-%m-%d %H:%M:%S}' - INTERVAL FLOOR(x * {step}) SECOND"
    return (
        f"INSERT INTO telemetry ({COLUMNS}) SELECT {when}, "
        f"{_values('CONCAT({0}, {1})')} FROM (SELECT seq AS x FROM seq_1_to_{n}) AS s"
    )


async def fill(url: str, rows: int, span: int) -> float:
    """Insert the rows, then fill the rollup from them (as migrations 0004 and 0007 do for
    rows written before them): the reads take whole hours and days from the rollup."""
    engine = create_engine(url)
    started = time.perf_counter()
    async with engine.begin() as connection:
        await connection.execute(text(insert_sql(engine.dialect.name, rows, span)))
    await backfill_rollup_engine(engine)
    if engine.dialect.name == "postgresql":
        # Index-only scans need the visibility map; autovacuum would set it soon after.
        async with engine.connect() as connection:
            await connection.execution_options(isolation_level="AUTOCOMMIT")
            for table in (
                "telemetry",
                "telemetry_hourly",
                "telemetry_hourly_latency",
                "telemetry_daily",
                "telemetry_hourly_histogram",
                "telemetry_daily_histogram",
            ):
                await connection.execute(text(f"VACUUM ANALYZE {table}"))
    elif engine.dialect.name == "sqlite":
        async with engine.begin() as connection:
            await connection.execute(text("ANALYZE"))
    await engine.dispose()
    return time.perf_counter() - started


async def plan(engine: AsyncEngine) -> str:
    prefix = "EXPLAIN QUERY PLAN" if engine.dialect.name == "sqlite" else "EXPLAIN"
    query = call_history_query(NOW - timedelta(days=DAYS))
    async with engine.connect() as connection:
        sql = query.compile(connection.sync_engine, compile_kwargs={"literal_binds": True})
        rows = (await connection.execute(text(f"{prefix} {sql}"))).all()
    return "\n".join("      " + " | ".join(str(c) for c in row if c is not None) for row in rows)


async def measure(url: str, runs: int) -> tuple[float, list[float], int, str]:
    engine = create_engine(url)
    timings = []
    for _ in range(runs + 1):
        started = time.perf_counter()
        history = await read_call_history(engine, DAYS, NOW)
        timings.append((time.perf_counter() - started) * 1000)
    calls = sum(figures.calls for figures in history.values())
    query_plan = await plan(engine)
    await engine.dispose()
    return timings[0], timings[1:], calls, query_plan


async def replace_index(url: str, columns: str) -> None:
    engine = create_engine(url)
    on_table = (
        " ON telemetry"
        if engine.dialect.name != "sqlite" and engine.dialect.name != "postgresql"
        else ""
    )
    async with engine.begin() as connection:
        await connection.execute(text(f"DROP INDEX ix_telemetry_call_history{on_table}"))
        await connection.execute(
            text(f"CREATE INDEX ix_telemetry_call_history ON telemetry ({columns})")
        )
    await engine.dispose()


async def run_backend(name: str, url: str, rows: int, runs: int, index: str | None) -> None:
    for layout, span in LAYOUTS.items():
        # A fresh schema per layout: deleted rows not yet purged would slow the scan.
        migrate.upgrade(url)
        if index:
            await replace_index(url, index)
        seconds = await fill(url, rows, span)
        cold, warm, calls, query_plan = await measure(url, runs)
        print(
            f"{name:10} {layout:17} rows={rows:,} in-population={calls:,} "
            f"cold={cold:7.1f} ms  warm: min={min(warm):7.1f} median="
            f"{statistics.median(warm):7.1f} max={max(warm):7.1f} ms  (fill {seconds:.1f} s)"
        )
        print(f"    plan:\n{query_plan}")
        migrate.downgrade(url)


async def server_ddl(server_url: str, statement: str) -> None:
    engine = create_async_engine(server_url, isolation_level="AUTOCOMMIT")
    async with engine.connect() as connection:
        await connection.execute(text(statement))
    await engine.dispose()


async def run_server(name: str, server_url: str, rows: int, runs: int, index: str | None) -> None:
    database = f"gwbench_{uuid.uuid4().hex[:10]}"
    await server_ddl(server_url, f"CREATE DATABASE {database}")
    try:
        url = make_url(server_url).set(database=database).render_as_string(hide_password=False)
        await run_backend(name, url, rows, runs, index)
    finally:
        force = " WITH (FORCE)" if name == "postgresql" else ""
        await server_ddl(server_url, f"DROP DATABASE IF EXISTS {database}{force}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5, help="warm runs after the cold one")
    parser.add_argument(
        "--index", help="try another column list for ix_telemetry_call_history (comma-separated)"
    )
    parser.add_argument("--only", help="run one backend: sqlite, postgresql or mariadb")
    args = parser.parse_args()
    print(
        f"call-history read, {DAYS}-day window, target <= 250 ms; python {sys.version.split()[0]}"
    )
    with tempfile.TemporaryDirectory() as directory:
        url = f"sqlite+aiosqlite:///{Path(directory) / 'bench.db'}"
        if args.only not in (None, "sqlite"):
            url = ""
        if url:
            await run_backend("sqlite", url, args.rows, args.runs, args.index)
    for name, variable in (
        ("postgresql", "GATEWAY_TEST_POSTGRES_URL"),
        ("mariadb", "GATEWAY_TEST_MARIADB_URL"),
    ):
        if args.only not in (None, name):
            continue
        if os.environ.get(variable):
            await run_server(name, os.environ[variable], args.rows, args.runs, args.index)
        else:
            print(f"{name}: skipped ({variable} not set)")


if __name__ == "__main__":
    asyncio.run(main())
