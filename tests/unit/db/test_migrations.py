"""Migrations run up and down on every dialect, and match gateway.db.tables."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection

import gateway.db.tables  # noqa: F401  (registers the tables)
from gateway.db import migrate
from gateway.db.base import metadata
from gateway.db.engine import create_engine
from gateway.db.tables import eval_results
from tests.unit.db.scratch import BACKENDS, scratch_database

CONTRACT_COLUMNS = {
    "telemetry": [
        "id",
        "created_at",
        "correlation_id",
        "api_key_id",
        "operation",
        "configuration",
        "provider",
        "adapter_type",
        "model",
        "served_configuration",
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
    ],
    "usage_daily": [
        "day",
        "api_key_id",
        "configuration",
        "provider",
        "model",
        "operation",
        "requests",
        "input_tokens",
        "output_tokens",
        "cost",
        "estimated_cost",
    ],
    "eval_results": [
        "set_id",
        "provider",
        "model",
        "grader",
        "prompt_count",
        "passed_count",
        "mean_score",
        "run_at",
    ],
}


@pytest.fixture(params=BACKENDS)
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with scratch_database(request.param, tmp_path) as url:
        yield url
        migrate.downgrade(url)


async def _inspect(url: str, look: Any) -> Any:
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            return await connection.run_sync(lambda sync: look(inspect(sync)))
    finally:
        await engine.dispose()


def _schema(inspector: Any) -> dict[str, Any]:
    tables = set(inspector.get_table_names())
    return {
        "tables": tables,
        "columns": {t: {c["name"] for c in inspector.get_columns(t)} for t in tables},
        "indexes": {i["name"] for t in tables for i in inspector.get_indexes(t)},
        "unique": {u["name"] for t in tables for u in inspector.get_unique_constraints(t)},
    }


async def test_upgrade_creates_every_contract_table_column_and_index(empty_url: str) -> None:
    migrate.upgrade(empty_url)
    schema = await _inspect(empty_url, _schema)
    for table, columns in CONTRACT_COLUMNS.items():
        assert set(columns) <= schema["columns"][table], table
    assert {"ix_telemetry_call_history", "ix_telemetry_health_window"} <= schema["indexes"]
    assert "uq_usage_daily_key" in schema["unique"] | schema["indexes"]


async def test_upgrade_twice_is_a_noop_and_lands_on_head(empty_url: str) -> None:
    migrate.upgrade(empty_url)
    migrate.upgrade(empty_url)
    engine = create_engine(empty_url)
    try:
        async with engine.connect() as connection:
            versions = await connection.execute(text("SELECT version_num FROM alembic_version"))
            assert versions.scalars().all() == [migrate.head_revision()]
    finally:
        await engine.dispose()


async def test_downgrade_to_base_drops_every_table(empty_url: str) -> None:
    migrate.upgrade(empty_url)
    migrate.downgrade(empty_url, "base")
    names = set(await _inspect(empty_url, lambda i: i.get_table_names()))
    assert names.isdisjoint({"telemetry", "usage_daily", "eval_results"})
    migrate.upgrade(empty_url)  # and back up again from base


def _differences(connection: Connection) -> list[Any]:
    context = MigrationContext.configure(connection, opts={"compare_type": True})
    return list(compare_metadata(context, metadata))


async def test_tables_module_matches_the_migrations(empty_url: str) -> None:
    migrate.upgrade(empty_url)
    engine = create_engine(empty_url)
    try:
        async with engine.connect() as connection:
            differences = await connection.run_sync(_differences)
    finally:
        await engine.dispose()
    assert differences == []


async def test_upgrade_engine_works_from_inside_an_event_loop(empty_url: str) -> None:
    engine = create_engine(empty_url)
    try:
        await migrate.upgrade_engine(engine)
    finally:
        await engine.dispose()
    assert "telemetry" in await _inspect(empty_url, lambda i: i.get_table_names())


def test_the_revision_chain_starts_at_the_initial_migration() -> None:
    scripts = ScriptDirectory.from_config(migrate.alembic_config())
    chain = [script.revision for script in scripts.walk_revisions()]
    assert chain[0] == migrate.head_revision()
    assert chain[-1] == "0001"


async def test_the_eval_natural_key_migration_keeps_one_row_per_run(empty_url: str) -> None:
    migrate.upgrade(empty_url, "0002")
    run = {
        "set_id": "math",
        "provider": "p",
        "model": "m",
        "grader": "deterministic",
        "prompt_count": 4,
        "passed_count": 2,
        "mean_score": 0.5,
        "run_at": datetime(2026, 11, 1, tzinfo=UTC),
    }
    engine = create_engine(empty_url)
    try:
        async with engine.begin() as connection:  # imported twice before the key existed
            await connection.execute(eval_results.insert(), [run, run, {**run, "set_id": "code"}])
        migrate.upgrade(empty_url)
        async with engine.connect() as connection:
            count = await connection.execute(text("SELECT count(*) FROM eval_results"))
            assert count.scalar_one() == 2
    finally:
        await engine.dispose()
    assert "uq_eval_results_run" in (await _inspect(empty_url, _schema))["indexes"]
