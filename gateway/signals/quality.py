"""The quality signal and the import of eval results into it.

quality(provider, model) = mean over eval sets of the latest deterministic
``mean_score`` per set. Other graders (an LLM judge, a human) are stored but
never route. The table is small (one row per eval run), so the latest-per-set
choice is made in Python over one ordered read.

One eval run is one row: set, provider, model, grader and run_at are its natural key
(a unique index), so importing the same file again adds nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import and_, delete, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.tables import eval_results
from gateway.db.upserts import insert_or_ignore
from gateway.domain.clock import utc_now
from gateway.domain.errors import GatewayException

DETERMINISTIC = "deterministic"

_e = eval_results.c
_REQUIRED = ("set_id", "provider", "model", "prompt_count", "passed_count", "mean_score")
_KNOWN = frozenset((*_REQUIRED, "grader", "run_at"))
_TEXT_LIMITS = {"set_id": 128, "provider": 128, "model": 191, "grader": 64}


async def read_quality(engine: AsyncEngine) -> dict[tuple[str, str], float]:
    query = (
        select(_e.provider, _e.model, _e.set_id, _e.mean_score)
        .where(_e.grader == DETERMINISTIC)
        .order_by(_e.run_at, _e.id)
    )
    async with engine.connect() as connection:
        rows = (await connection.execute(query)).all()
    latest: dict[tuple[str, str], dict[str, float]] = {}
    for provider, model, set_id, score in rows:  # ascending: the last one per set wins
        latest.setdefault((provider, model), {})[set_id] = float(score)
    return {key: sum(sets.values()) / len(sets) for key, sets in latest.items()}


class EvalImportError(GatewayException, ValueError):
    """Lines that cannot be imported, each as ``line N: why``; nothing was imported."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass(frozen=True, slots=True)
class EvalImport:
    inserted: int
    already_there: int  # runs recorded before (same set, provider, model, grader, run_at)
    warnings: list[str]  # ``line N: ...``: imported, but something looks wrong
    undated: int = 0  # lines without run_at, recorded at the import time


KnownModels = Mapping[str, Collection[str]]  # provider id -> its model ids


async def import_eval_results(
    engine: AsyncEngine,
    lines: Iterable[str],
    *,
    known: KnownModels | None = None,
    clock: Callable[[], datetime] = utc_now,
) -> EvalImport:
    """Insert JSONL eval rows in one transaction, skipping runs already recorded.

    Blank lines are skipped. Every invalid line is reported (``EvalImportError``, each
    problem naming its 1-based line number) and then nothing is inserted. With
    ``known``, a provider or model it does not list is a warning: such results are
    kept, but no candidate will ever read them.
    """
    now = clock()
    rows: list[dict[str, Any]] = []
    problems: list[str] = []
    warnings: list[str] = []
    undated = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = parse_eval_line(line, number, now)
        except ValueError as error:
            problems.append(str(error))
            continue
        undated += row["run_at"] is now  # the line gave no run_at: the import time stands
        warnings.extend(_unknown(row, number, known))
        rows.append(row)
    if problems:
        raise EvalImportError(problems)
    inserted = await _insert_new(engine, rows) if rows else 0
    return EvalImport(inserted, len(rows) - inserted, warnings, undated)


async def replace_eval_runs(engine: AsyncEngine, rows: list[dict[str, Any]]) -> int:
    """Record runs, each replacing every earlier run of its set, provider, model and grader
    (``gateway eval run``: running a suite again replaces its result). One transaction;
    how many earlier rows were replaced."""
    replaced = 0
    async with engine.begin() as connection:
        for row in rows:
            same_run = and_(
                _e.set_id == row["set_id"],
                _e.provider == row["provider"],
                _e.model == row["model"],
                _e.grader == row.get("grader", DETERMINISTIC),
            )
            result = await connection.execute(delete(eval_results).where(same_run))
            replaced += max(result.rowcount, 0)
            await connection.execute(insert(eval_results), {"grader": DETERMINISTIC, **row})
    return replaced


def _unknown(row: dict[str, Any], number: int, known: KnownModels | None) -> list[str]:
    if known is None:
        return []
    provider, model = row["provider"], row["model"]
    if provider not in known:
        return [f"line {number}: provider '{provider}' is not in the config"]
    if model not in known[provider]:
        return [f"line {number}: provider '{provider}' has no model '{model}' in the config"]
    return []


async def _insert_new(engine: AsyncEngine, rows: list[dict[str, Any]]) -> int:
    """Insert each row unless its run is recorded already; how many were new."""
    inserted = 0
    async with engine.begin() as connection:
        # The unique index on the natural key decides; the database skips a duplicate.
        insert = insert_or_ignore(connection.dialect.name, eval_results)
        for row in rows:
            result = await connection.execute(insert, row)
            inserted += max(result.rowcount, 0)
    return inserted


def parse_eval_line(line: str, number: int, now: datetime) -> dict[str, Any]:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"line {number}: not valid JSON ({exc.msg})") from exc
    if not isinstance(data, dict):
        raise ValueError(f"line {number}: expected a JSON object")
    try:
        return _validated(data, now)
    except ValueError as exc:
        raise ValueError(f"line {number}: {exc}") from None


def _validated(data: dict[str, Any], now: datetime) -> dict[str, Any]:
    missing = [name for name in _REQUIRED if name not in data]
    if missing:
        raise ValueError("missing " + ", ".join(missing))
    unknown = sorted(set(data) - _KNOWN)
    if unknown:
        raise ValueError("unknown field " + ", ".join(unknown))
    row: dict[str, Any] = {"grader": DETERMINISTIC, **data}
    for name, limit in _TEXT_LIMITS.items():
        value = row[name]
        if not isinstance(value, str) or not value or len(value) > limit:
            raise ValueError(f"{name} must be a non-empty string of at most {limit} characters")
    prompts, passed = row["prompt_count"], row["passed_count"]
    if not _is_int(prompts) or prompts < 0:
        raise ValueError("prompt_count must be an integer >= 0")
    if not _is_int(passed) or not 0 <= passed <= prompts:
        raise ValueError("passed_count must be an integer between 0 and prompt_count")
    score = row["mean_score"]
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1:
        raise ValueError("mean_score must be a number between 0 and 1")
    row["mean_score"] = float(score)
    row["run_at"] = _timestamp(row.get("run_at"), now)
    return row


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _timestamp(value: object, now: datetime) -> datetime:
    if value is None:
        return now
    if not isinstance(value, str):
        raise ValueError("run_at must be an ISO-8601 string")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"run_at is not ISO-8601: {value!r}") from None
    # A timestamp without an offset is taken as UTC, like every time in the database.
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
