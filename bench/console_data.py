"""The console benchmark's data set (bench/console.py): a month of generated telemetry rows
in a SQLite file, usage_daily and the hourly rollup filled from them, and their copy into
a PostgreSQL database."""

from __future__ import annotations

import random
import sqlite3
import sys
import time
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
from sqlalchemy import Column, Date, Numeric, create_engine
from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gateway.db.rollup_tables import telemetry_hourly, telemetry_hourly_latency
from gateway.db.tables import telemetry, usage_daily
from gateway.db.types import UtcDateTime
from gateway.telemetry.backfill import backfill_rollup

CONFIGURATIONS = ("smart-chat", "cheap-chat", "tools", "embed", "legacy", "support-bot")
KEYS = tuple(f"team-{n}" for n in range(8))
MODELS = (
    ("gpt-4o", "openai-main"),
    ("gpt-4o-mini", "openai-main"),
    ("o3-mini", "openai-main"),
    ("claude-sonnet", "anthropic"),
    ("claude-haiku", "anthropic"),
    ("llama-70b", "local"),
    ("llama-8b", "local"),
    ("embed-small", "openai-main"),
    ("embed-large", "local"),
)
ERRORS = (
    ("upstream_5xx", 502),
    ("upstream_timeout", 504),
    ("budget_exceeded", 429),
    ("upstream_429", 429),
    ("no_eligible_model", 503),
)


def detail_documents() -> list[str]:
    documents = []
    for chosen in range(3):
        candidates = [
            {
                "rank": r + 1,
                "model": MODELS[(chosen + r) % 7][0],
                "provider": MODELS[(chosen + r) % 7][1],
                "adapterType": "openai",
                "priority": 50,
                "score": 0.8 - r * 0.1,
                "signals": {
                    "quality": 0.7,
                    "health": 0.98,
                    "cost": 0.5,
                    "latency": None,
                    "callCost": None,
                },
                "history": None,
                "warnings": [],
            }
            for r in range(4)
        ]
        decision = {
            "configuration": "smart-chat",
            "fixed": False,
            "operation": "chat",
            "mode": "balanced",
            "modeOverridden": False,
            "callHistory": False,
            "costBasis": "list",
            "selected": {"model": candidates[0]["model"], "provider": candidates[0]["provider"]},
            "candidates": candidates,
            "rejected": [
                {"model": "embed-small", "provider": "openai-main", "reason": "CAPABILITY_MISSING"}
            ],
            "signalsUsed": ["quality", "health", "cost"],
            "decidedBy": "score",
            "outscoredBy": [],
            "weights": {
                "quality": 0.4,
                "health": 0.4,
                "cost": 0.2,
                "latency": 0.1,
                "callCost": 0.2,
            },
            "candidateCount": 5,
            "rejectedCount": 1,
        }
        documents.append(
            msgspec.json.encode(
                {
                    "v": 1,
                    "kind": "routed",
                    "decision": decision,
                    "attempts": [
                        {
                            "configuration": "smart-chat",
                            "provider": candidates[0]["provider"],
                            "model": candidates[0]["model"],
                            "outcome": "served",
                            "status": None,
                            "retries": 0,
                        }
                    ],
                    "error": None,
                }
            ).decode()
        )
    return documents


COLUMNS = (
    "created_at",
    "correlation_id",
    "api_key_id",
    "operation",
    "configuration",
    "provider",
    "adapter_type",
    "model",
    "served_provider",
    "served_model",
    "response_model",
    "success",
    "error_class",
    "http_status",
    "latency_ms",
    "time_to_first_token_ms",
    "cache_hit",
    "fallback_attempts",
    "provider_retries",
    "actual_input_tokens",
    "actual_output_tokens",
    "actual_cost",
    "usage_source",
    "routing_policy_mode",
    "routing_candidates",
    "routing_rejections",
    "routing_cost_basis",
    "routing_signal_quality",
    "routing_signal_health",
    "routing_signal_cost",
    "routing_signal_latency",
    "routing_signal_call_cost",
    "routing_detail",
)


def generate(path: Path, rows: int, now: datetime) -> None:
    """The rows, written with sqlite3 directly (as SQLAlchemy stores them on SQLite:
    naive UTC text, money as a double), then usage_daily from them in SQL."""
    rng = random.Random(12)
    details = detail_documents()
    start = (now - timedelta(days=30)).replace(tzinfo=None)
    step = (now.replace(tzinfo=None) - start) / rows
    started = time.perf_counter()
    connection = sqlite3.connect(path)
    insert = (
        f"INSERT INTO telemetry ({', '.join(COLUMNS)}) VALUES ({', '.join('?' for _ in COLUMNS)})"
    )
    batch: list[tuple[Any, ...]] = []
    random_ = rng.random
    for n in range(rows):
        created = (start + step * n).strftime("%Y-%m-%d %H:%M:%S.%f")
        model, provider = MODELS[rng.randrange(len(MODELS))]
        ok = random_() >= 0.06
        routed = random_() < 0.6
        cache = ok and random_() < 0.03
        error_class, status = (None, 200) if ok else ERRORS[rng.randrange(len(ERRORS))]
        tokens_in, tokens_out = rng.randrange(50, 4000), rng.randrange(10, 800)
        stream = random_() < 0.3
        billed = ok and not cache
        batch.append(
            (
                created,
                f"bench-{n}",
                KEYS[rng.randrange(len(KEYS))],
                "stream" if stream else "chat",
                CONFIGURATIONS[rng.randrange(len(CONFIGURATIONS))],
                provider,
                "openai",
                model,
                provider if ok else None,
                model if ok else None,
                model,
                1 if ok else 0,
                error_class,
                status,
                rng.lognormvariate(6.5, 0.6),
                rng.lognormvariate(5.5, 0.5) if stream and ok else None,
                1 if cache else 0,
                0,
                0,
                tokens_in if billed else None,
                tokens_out if billed else None,
                (tokens_in * 5 + tokens_out * 15) / 1e7 if billed else None,
                "provider" if billed else "none",
                "balanced" if routed else "",
                5 if routed else 0,
                "CAPABILITY_MISSING" if routed else "",
                "list" if routed else "",
                int(routed),
                int(routed),
                int(routed),
                0,
                0,
                details[n % 3] if routed else None,
            )
        )
        if len(batch) == 50000:
            connection.executemany(insert, batch)
            batch.clear()
    if batch:
        connection.executemany(insert, batch)
    connection.execute(
        "INSERT INTO usage_daily (day, api_key_id, configuration, provider, model, operation,"
        " requests, input_tokens, output_tokens, cost, estimated_cost)"
        " SELECT date(created_at), coalesce(api_key_id, ''), configuration,"
        " coalesce(served_provider, ''), coalesce(served_model, ''), operation, count(*),"
        " coalesce(sum(actual_input_tokens), 0), coalesce(sum(actual_output_tokens), 0),"
        " coalesce(sum(actual_cost), 0), 0 FROM telemetry WHERE served_model IS NOT NULL"
        " GROUP BY 1, 2, 3, 4, 5, 6"
    )
    connection.commit()
    connection.close()
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as sync:
        backfill_rollup(sync)  # the writer's own aggregation (gateway.telemetry.rollup)
        sync.exec_driver_sql("ANALYZE")
    engine.dispose()
    print(f"generated {rows:,} rows in {time.perf_counter() - started:.1f} s", flush=True)


def _converter(column: Column[Any]) -> Any:
    """SQLite's stored value to the Python value asyncpg's COPY takes for the column."""
    kind = column.type
    if isinstance(kind, UtcDateTime):
        return lambda v: None if v is None else datetime.fromisoformat(v).replace(tzinfo=UTC)
    if isinstance(kind, Date):
        return lambda v: None if v is None else date.fromisoformat(v)
    if isinstance(kind, Numeric) and kind.asdecimal:
        return lambda v: None if v is None else Decimal(str(v))
    return lambda v: v


async def copy_to_postgres(path: Path, url: str) -> None:
    """Every generated table, from the SQLite file into the PostgreSQL database at ``url``."""
    import asyncpg

    started = time.perf_counter()
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    source = sqlite3.connect(path)
    target = await asyncpg.connect(dsn)
    try:
        for table in (telemetry, usage_daily, telemetry_hourly, telemetry_hourly_latency):
            names = [column.name for column in table.columns]
            converters = [_converter(column) for column in table.columns]
            await target.execute(f"TRUNCATE {table.name}")
            cursor = source.execute(f"SELECT {', '.join(names)} FROM {table.name}")
            while batch := cursor.fetchmany(50_000):
                records = [
                    tuple(convert(value) for convert, value in zip(converters, row, strict=True))
                    for row in batch
                ]
                await target.copy_records_to_table(table.name, records=records, columns=names)
        await target.execute(
            "SELECT setval(pg_get_serial_sequence('telemetry', 'id'), max(id)) FROM telemetry"
        )
        await target.execute("VACUUM ANALYZE")
    finally:
        await target.close()
        source.close()
    print(f"copied into PostgreSQL in {time.perf_counter() - started:.1f} s", flush=True)
