"""CLI commands that read the database the config names: explain and eval import."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.circuits import InProcessCircuits
from gateway.db.engine import create_engine, describe_error
from gateway.db.files import missing_database
from gateway.db.migrate import head_revision, known_revisions, schema_revision, upgrade
from gateway.domain.clock import utc_now
from gateway.domain.errors import GatewayError
from gateway.domain.settings import GatewayConfig
from gateway.pipeline.explain import explain_configuration
from gateway.pipeline.snapshots import SnapshotSource
from gateway.routing.readout import render_table
from gateway.signals.quality import EvalImportError, import_eval_results
from gateway.signals.refresher import SignalRefresher


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
    counts as closed here (the table says so). It only reads: a database that is not
    migrated to this gateway's schema is reported, never upgraded, and a SQLite file that
    does not exist is reported, never created.
    """
    absent = missing_database(config.database.url)
    if absent is not None:
        print(f"error: {absent} (explain only reads)", file=sys.stderr)
        return 1
    engine = create_engine(config.database.url)
    try:
        problem = await _schema_problem(engine)
        if problem is not None:
            print(f"error: {problem}", file=sys.stderr)
            return 1
        signals = SignalRefresher(engine, config, utc_now)
        await signals.refresh_now()
        breakers = InProcessCircuits(
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


async def _schema_problem(engine: AsyncEngine) -> str | None:
    """Why explain cannot read the database, or None. A schema ahead of this gateway's
    (a newer gateway migrated it) is read as it is."""
    try:
        revision = await schema_revision(engine)
    except Exception as exc:
        return f"the database cannot be read ({describe_error(exc)})"
    if revision is None:
        found = "the database has no gateway schema yet"
    elif revision != (head := head_revision()) and revision in known_revisions():
        found = f"the database schema is at revision {revision}, this gateway's at {head}"
    else:
        return None
    return f"{found}: run `gateway db upgrade` (explain reads the database, it never migrates)"


async def import_evals(config: GatewayConfig, path: Path) -> int:
    """Every bad line is reported (then nothing is imported); unknown ids are warnings."""
    known = {pid: set[str]() for pid in config.providers}
    for model in config.models:
        known[model.provider].add(model.id)
    upgrade(config.database.url)
    engine = create_engine(config.database.url)
    try:
        with path.open(encoding="utf-8") as lines:
            done = await import_eval_results(engine, lines, known=known)
    except EvalImportError as error:
        for problem in error.problems:
            print(f"{path}: {problem}", file=sys.stderr)
        print(f"{len(error.problems)} bad line(s): nothing imported", file=sys.stderr)
        return 1
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    finally:
        await engine.dispose()
    for warning in done.warnings:
        print(f"{path}: warning: {warning} (imported, but never read by routing)", file=sys.stderr)
    if done.undated:
        print(
            f"{path}: {done.undated} line(s) without run_at were recorded at the import time;"
            " give run_at to make importing the file again a no-op",
            file=sys.stderr,
        )
    skipped = f" ({done.already_there} already recorded, skipped)" if done.already_there else ""
    print(f"imported {done.inserted} eval result(s) from {path}{skipped}")
    return 0
