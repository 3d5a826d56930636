"""The signal refresher: what it reads, when, and how a failed read degrades."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.engine import create_engine
from gateway.domain import GatewayConfig, HealthSample, Operation, RoutingSettings
from gateway.domain.settings import TelemetrySettings
from gateway.signals.quality import import_eval_results
from gateway.signals.refresher import InProcessSignalStore, SignalReading, SignalRefresher
from gateway.telemetry.writer import TelemetryWriter
from tests.unit.telemetry.factory import NOW, make_record

HISTORY_ON = GatewayConfig(routing=RoutingSettings(call_history=True))
KEY = ("openai-main", "gpt-4o-mini", Operation.CHAT)
EVAL_LINE = (
    '{"set_id": "s", "provider": "openai-main", "model": "gpt-4o-mini",'
    ' "prompt_count": 2, "passed_count": 1, "mean_score": 0.5}'
)


async def _seed(engine: AsyncEngine) -> None:
    writer = TelemetryWriter(engine)
    writer.submit(make_record(latency_ms=250.0))
    await writer.flush()
    await import_eval_results(engine, [EVAL_LINE], clock=lambda: NOW)


async def test_refresh_reads_health_quality_and_history(engine: AsyncEngine) -> None:
    await _seed(engine)
    refresher = SignalRefresher(engine, HISTORY_ON, lambda: NOW)
    await refresher.refresh_now()
    assert refresher.health == {"openai-main": HealthSample(1, 1, 250.0)}
    assert refresher.quality == {("openai-main", "gpt-4o-mini"): 0.5}
    assert refresher.history is not None
    assert refresher.history[KEY].calls == 1
    assert refresher.history_taken_at == NOW


async def test_history_is_not_read_with_call_history_off(engine: AsyncEngine) -> None:
    await _seed(engine)
    refresher = SignalRefresher(engine, GatewayConfig(), lambda: NOW)
    await refresher.refresh_now()
    assert refresher.history is None
    assert refresher.health  # the other signals still are


async def test_history_is_not_read_with_telemetry_disabled(engine: AsyncEngine) -> None:
    await _seed(engine)
    config = replace(HISTORY_ON, telemetry=TelemetrySettings(enabled=False))
    refresher = SignalRefresher(engine, config, lambda: NOW)
    await refresher.refresh_now()
    assert refresher.history is None


async def test_a_failed_history_read_means_no_history_and_is_counted(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'no-tables.db'}")
    try:
        refresher = SignalRefresher(engine, HISTORY_ON, lambda: NOW)
        refresher.history = {}  # as if an earlier read had succeeded
        await refresher.refresh_now()
    finally:
        await engine.dispose()
    assert refresher.history is None
    assert refresher.history_read_failures == 1
    assert (refresher.health_read_failures, refresher.quality_read_failures) == (1, 1)


async def test_a_store_snapshot_younger_than_the_period_is_taken_instead_of_a_read(
    engine: AsyncEngine,
) -> None:
    await _seed(engine)
    store = InProcessSignalStore()
    shared = {"elsewhere": HealthSample(5, 5, 10.0)}
    await store.set_health(SignalReading(shared, NOW - timedelta(seconds=30)))
    refresher = SignalRefresher(engine, HISTORY_ON, lambda: NOW, store=store)
    await refresher.refresh_due()
    assert refresher.health == shared
    await store.set_health(SignalReading(shared, NOW - timedelta(seconds=61)))  # stale now
    await refresher.refresh_due()
    assert refresher.health == {"openai-main": HealthSample(1, 1, 250.0)}
    reading = await store.get_health()
    assert reading is not None and reading.taken_at == NOW  # shared with other workers


async def test_start_reads_once_and_stop_ends_the_background_tasks(engine: AsyncEngine) -> None:
    await _seed(engine)
    refresher = SignalRefresher(engine, HISTORY_ON, lambda: NOW)
    await refresher.start()
    assert refresher.history is not None
    await refresher.stop()
    assert refresher.quality
