"""CLI commands that read the database the config names: explain and eval import."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gateway.db.engine import create_engine
from gateway.db.migrate import upgrade
from gateway.domain.errors import GatewayError
from gateway.domain.settings import GatewayConfig
from gateway.pipeline.explain import explain_configuration
from gateway.pipeline.snapshots import SnapshotSource
from gateway.routing.circuit import CircuitBreakers
from gateway.routing.readout import render_table
from gateway.runtime import utc_now
from gateway.signals.cache import SignalRefresher
from gateway.signals.quality import import_eval_results


async def explain_from_database(
    config: GatewayConfig,
    configuration: str,
    operation: str,
    mode: str | None,
    *,
    as_json: bool = False,
) -> int:
    """The same decision as the admin endpoint, from one fresh read of the database.

    A separate process cannot see a running server's circuit states: every circuit
    counts as closed here (the table says so).
    """
    upgrade(config.database.url)
    engine = create_engine(config.database.url)
    try:
        signals = SignalRefresher(engine, config, utc_now)
        await signals.refresh_now()
        breakers = CircuitBreakers(
            config.circuit_breaker.failure_threshold, config.circuit_breaker.cooldown_seconds
        )
        snapshot = SnapshotSource(config, signals, breakers).snapshot()
        try:
            payload = explain_configuration(config, snapshot, configuration, operation, mode)
        except GatewayError as error:
            print(f"error: {error.message}", file=sys.stderr)
            return 2 if error.http_status == 404 else 1
    finally:
        await engine.dispose()
    print(json.dumps(payload, indent=2) if as_json else render_table(payload))
    return 0


async def import_evals(config: GatewayConfig, path: Path) -> int:
    upgrade(config.database.url)
    engine = create_engine(config.database.url)
    try:
        with path.open(encoding="utf-8") as lines:
            count = await import_eval_results(engine, lines)
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    finally:
        await engine.dispose()
    print(f"imported {count} eval result(s) from {path}")
    return 0
