"""The SQL recipes of docs/telemetry.md run as written, and find rows, on each database.

A ```sql block is portable and runs on SQLite, PostgreSQL and MariaDB; ```sql sqlite,
```sql postgresql and ```sql mariadb run only there. The scratch database is migrated to
head and seeded through the gateway's own writers (the telemetry writer, the eval import,
a budget hold), with calls two days ago and in the last minutes (never on a fixed date:
a recipe that names a date finds nothing once its month is past), so that every recipe,
date filters included, has something to find. A recipe finds something when a row has a
value that is not NULL: an aggregate over nothing (``SUM`` of no rows) finds nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.budgets.figures import Amounts
from gateway.budgets.store import BudgetStore
from gateway.budgets.windows import Period, budget_lines
from gateway.domain.model import BudgetLimits, BudgetSpec, Configuration, ConfigurationMode
from gateway.domain.settings import ApiKey
from gateway.signals.quality import import_eval_results
from gateway.telemetry.records import TelemetryRecord
from gateway.telemetry.writer import TelemetryWriter

from ..db.scratch import database_url, engine
from .markdown import code_blocks, read_doc

__all__ = ["database_url", "engine"]

DIALECTS = ("sqlite", "postgresql", "mariadb")


def recipes() -> list[tuple[str | None, str]]:
    """(dialect or None for every one, statement) of each SQL block, in order."""
    found: list[tuple[str | None, str]] = []
    for block in code_blocks(read_doc("telemetry.md")):
        words = block.info.split()
        if not words or words[0] != "sql":
            continue
        assert len(words) <= 2, f"a SQL block names at most one database: {block.info!r}"
        dialect = words[1] if len(words) == 2 else None
        assert dialect is None or dialect in DIALECTS, f"unknown database {dialect!r}"
        statements = [s.strip() for s in block.body.split(";") if s.strip()]
        assert statements, "an empty SQL block"
        found += [(dialect, statement) for statement in statements]
    return found


def test_the_recipes_cover_every_database() -> None:
    found = recipes()
    portable = [s for d, s in found if d is None]
    assert len(portable) >= 10
    for dialect in DIALECTS:
        assert any(d == dialect for d, _ in found), f"no {dialect} recipe"


def _record(at: datetime, **fields: object) -> TelemetryRecord:
    base: dict[str, object] = {
        "created_at": at,
        "request_id": f"seed-{at.timestamp()}",
        "api_key_id": "alice",
        "operation": "chat",
        "configuration": "smart-chat",
        "success": True,
        "http_status": 200,
        "latency_ms": 812.4,
    }
    return TelemetryRecord(**{**base, **fields})  # type: ignore[arg-type]


def _served(provider: str, model: str, configuration: str = "smart-chat") -> dict[str, object]:
    return {
        "provider": provider,
        "adapter_type": "openai",
        "model": model,
        "served_configuration": configuration,
        "served_provider": provider,
        "served_model": model,
        "response_model": f"{model}-2024-07-18",
    }


def seed_calls(now: datetime) -> list[TelemetryRecord]:
    routed = {
        "routing_policy_mode": "economy",
        "routing_candidates": 3,
        "routing_rejections": "CAPABILITY_MISSING",
        "routing_cost_basis": "list",
        "routing_signal_health": True,
        "routing_signal_cost": True,
    }
    reported = {"usage_source": "provider", "actual_input_tokens": 1000}
    return [
        _record(
            now - timedelta(days=2),
            team_id="platform",
            **_served("openai-main", "gpt-4o-mini"),
            **routed,
            **reported,
            actual_output_tokens=500,
            actual_cost=Decimal("0.00045"),
        ),
        _record(
            now - timedelta(minutes=5),
            operation="stream",
            **{**_served("openai-main", "gpt-4o-mini", "backup-chat"), "provider": "claude"},
            fallback_attempts=1,
            provider_retries=2,
            time_to_first_token_ms=350.0,
            latency_ms=2300.0,
            usage_source="provider",
            actual_input_tokens=200,
            actual_output_tokens=300,
            actual_cost=Decimal("0.00021"),
            routing_policy_mode="balanced",
            routing_cost_basis="measured",
            routing_signal_latency=True,
            routing_signal_call_cost=True,
        ),
        _record(
            now - timedelta(minutes=10),
            provider="openai-main",
            adapter_type="openai",
            model="gpt-4o-mini",
            success=False,
            http_status=502,
            error_class="upstream_5xx",
            **routed,
        ),
        _record(now - timedelta(minutes=2), cache_hit=True, response_model="gpt-4o-mini"),
        _record(
            now - timedelta(minutes=1),
            api_key_id="bob",
            operation="completion",
            configuration="legacy",
            **_served("local", "llama3", "legacy"),
            usage_source="estimated",
            estimated_input_tokens=12,
            estimated_output_tokens=30,
            estimated_cost=Decimal("0.0000042"),
        ),
        _record(
            now - timedelta(minutes=4),
            **_served("openai-main", "gpt-4o-mini"),
            **routed,
            **reported,
            actual_output_tokens=120,
            actual_cost=Decimal("0.00022"),
            latency_ms=930.0,
        ),
        _record(
            now - timedelta(minutes=3),
            operation="vision",
            **_served("openai-main", "gpt-4o-mini"),
            **routed,
            **reported,
            actual_output_tokens=80,
            actual_cost=Decimal("0.0012"),
            latency_ms=640.0,
        ),
    ]


EVALS = [
    '{"set_id": "mmlu-mini", "provider": "openai-main", "model": "gpt-4o-mini", '
    '"prompt_count": 50, "passed_count": 41, "mean_score": 0.82, "run_at": "2026-11-01T00:00:00Z"}',
    '{"set_id": "mmlu-mini", "provider": "openai-main", "model": "gpt-4o-mini", '
    '"prompt_count": 50, "passed_count": 43, "mean_score": 0.86, "run_at": "2026-11-20T00:00:00Z"}',
    '{"set_id": "json-tasks", "provider": "openai-main", "model": "gpt-4o-mini", '
    '"prompt_count": 20, "passed_count": 18, "mean_score": 0.9, "run_at": "2026-11-20T00:00:00Z"}',
]


async def seed(engine: AsyncEngine, now: datetime) -> None:
    writer = TelemetryWriter(engine)
    await writer.start()
    for record in seed_calls(now):
        writer.submit(record)
    await writer.flush()
    await writer.stop()
    assert writer.written == len(seed_calls(now))
    await import_eval_results(engine, EVALS)
    key = ApiKey(id="alice", key_hash="0" * 64, budget=BudgetSpec(daily=BudgetLimits(requests=100)))
    lines = budget_lines(key, Configuration(id="smart-chat", mode=ConfigurationMode.CRITERIA), now)
    assert lines and lines[0].period is Period.DAY
    held = Amounts(1, 1500, Decimal("0.01"))
    await BudgetStore(engine).reserve(lines, held, now + timedelta(minutes=20))


def _dialect_of(engine: AsyncEngine) -> str:
    name = engine.dialect.name
    return "mariadb" if name in ("mysql", "mariadb") else name


def seed_time(now: datetime) -> datetime:
    """``now``, or a quarter of an hour past midnight UTC when now is earlier: the calls
    seeded minutes before it are then today's, as the recipes' ``CURRENT_DATE`` reads."""
    return max(now, datetime.combine(now.date(), time(0, 15), tzinfo=UTC))


def finds_something(rows: list[Any]) -> bool:
    return any(value is not None for row in rows for value in row)


async def test_every_recipe_runs_as_written_and_finds_rows(engine: AsyncEngine) -> None:
    await seed(engine, seed_time(datetime.now(UTC)))
    dialect = _dialect_of(engine)
    mine = [statement for d, statement in recipes() if d in (None, dialect)]
    failures: list[str] = []
    for statement in mine:
        try:
            async with engine.connect() as connection:
                rows = (await connection.exec_driver_sql(statement)).all()
        except Exception as error:
            failures.append(f"{type(error).__name__}: {str(error).splitlines()[0]}\n{statement}")
            continue
        if not finds_something(list(rows)):
            failures.append(f"no rows, or only NULLs:\n{statement}")
    assert not failures, f"{dialect}:\n\n" + "\n\n".join(failures)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_each_database_runs_several_recipes(dialect: str) -> None:
    assert len([s for d, s in recipes() if d in (None, dialect)]) >= 15
