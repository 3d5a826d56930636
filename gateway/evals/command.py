"""``gateway eval run SUITE --configuration ID | --model ID...``: the CLI's side of a run.

The cases go through an in-process Runtime built from the same config the server runs
(the proxy's Pipeline: routing, budgets, pricing, telemetry). ``--model`` runs each model
through a fixed configuration made for the run, named ``eval:MODEL``; its calls carry
that name in ``telemetry.configuration``.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from gateway.db.migrate import upgrade
from gateway.domain.clock import utc_now
from gateway.domain.model import Configuration, ConfigurationMode
from gateway.domain.settings import GatewayConfig
from gateway.domain.suggest import valid_hint
from gateway.evals.report import RunReport, render
from gateway.evals.runner import CaseOutcome, ModelScore, run_cases, summarize
from gateway.evals.suite import EvalCase, SuiteError, parse_suite
from gateway.runtime import Runtime
from gateway.signals.quality import DETERMINISTIC, replace_eval_runs

MODEL_PREFIX = "eval:"
_ID_LIMIT = 128


@dataclasses.dataclass(frozen=True, slots=True)
class Target:
    label: str  # "configuration ID" / "model ID"
    configuration: str  # the configuration id the calls name


async def run_eval(
    config: GatewayConfig,
    suite: Path,
    *,
    configuration: str | None,
    models: Sequence[str],
    set_id: str | None = None,
    concurrency: int = 4,
    console: Console | None = None,
    clock: Callable[[], datetime] = utc_now,
) -> int:
    """0: every call answered and the scores are recorded; 1: a call failed (that run is
    not recorded) or the suite is bad; 2: an unknown configuration or model."""
    name: str = set_id or suite.stem
    if not name or len(name) > _ID_LIMIT:
        print(f"error: the set id must be 1 to {_ID_LIMIT} characters: pass --set", file=sys.stderr)
        return 1
    try:
        with suite.open(encoding="utf-8") as lines:
            cases = parse_suite(lines)
    except SuiteError as error:
        for problem in error.problems:
            print(f"{suite}: {problem}", file=sys.stderr)
        print(f"{len(error.problems)} problem(s): nothing run", file=sys.stderr)
        return 1
    except (OSError, UnicodeDecodeError) as error:
        print(f"error: cannot read {suite}: {error}", file=sys.stderr)
        return 1
    targets, refused = _targets(config, configuration, models)
    if refused is not None:
        print(f"error: {refused}", file=sys.stderr)
        return 2
    upgrade(config.database.url)
    runtime = Runtime(_with_model_configurations(config, models))
    await runtime.start()
    try:
        reports = await _run_all(runtime, targets, cases, concurrency, console)
        run_at = clock()
        rows = [
            _row(name, score, run_at)
            for report in reports
            if report.recorded
            for score in report.scores
        ]
        replaced = await replace_eval_runs(runtime.engine, rows) if rows else 0
    finally:
        await runtime.stop()  # writes every call's telemetry row
    print(render(name, len(cases), reports))
    print()
    earlier = f", replacing {replaced} earlier" if replaced else ""
    print(f"recorded {len(rows)} eval_results row(s) for set {name}{earlier}")
    return 1 if any(report.failed_calls for report in reports) else 0


def _targets(
    config: GatewayConfig, configuration: str | None, models: Sequence[str]
) -> tuple[list[Target], str | None]:
    if configuration is not None:
        if configuration not in config.configurations:
            hint = valid_hint(configuration, config.configurations, "configuration")
            return [], f"unknown configuration '{configuration}'. {hint}"
        return [Target(f"configuration {configuration}", configuration)], None
    known = {model.id for model in config.models}
    targets = []
    for model in dict.fromkeys(models):
        if model not in known:
            return [], f"unknown model '{model}'. {valid_hint(model, known, 'model')}"
        made = MODEL_PREFIX + model
        if len(made) > _ID_LIMIT:
            return [], f"model id '{model}' is too long to run with --model"
        targets.append(Target(f"model {model}", made))
    return targets, None


def _with_model_configurations(config: GatewayConfig, models: Sequence[str]) -> GatewayConfig:
    """The config plus one fixed configuration per ``--model``."""
    if not models:
        return config
    made = {
        MODEL_PREFIX + m: Configuration(id=MODEL_PREFIX + m, mode=ConfigurationMode.FIXED, model=m)
        for m in models
    }
    return dataclasses.replace(config, configurations={**config.configurations, **made})


async def _run_all(
    runtime: Runtime,
    targets: Sequence[Target],
    cases: Sequence[EvalCase],
    concurrency: int,
    console: Console | None,
) -> list[RunReport]:
    shown = console or Console(stderr=True)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    reports = []
    # Drawn only on a terminal: piped output stays the table alone.
    with Progress(*columns, console=shown, disable=not shown.is_terminal) as progress:
        for target in targets:
            task = progress.add_task(target.label, total=len(cases))

            def advance(_: CaseOutcome, task: Any = task) -> None:
                progress.advance(task)

            outcomes = await run_cases(
                runtime.pipeline,
                target.configuration,
                cases,
                concurrency=concurrency,
                on_done=advance,
            )
            failed = any(o.error is not None for o in outcomes)
            reports.append(RunReport(target.label, outcomes, summarize(outcomes), not failed))
    return reports


def _row(set_id: str, score: ModelScore, run_at: datetime) -> dict[str, Any]:
    return {
        "set_id": set_id,
        "provider": score.provider,
        "model": score.model,
        "grader": DETERMINISTIC,
        "prompt_count": score.prompt_count,
        "passed_count": score.passed_count,
        "mean_score": score.mean_score,
        "run_at": run_at,
    }
