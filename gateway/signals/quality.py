"""The quality signal (ROUTING.md "Signals") and the import of eval results into it.

quality(provider, model) = mean over eval sets of the latest deterministic
``mean_score`` per set. Other graders (an LLM judge, a human) are stored but
never route. The table is small (one row per eval run), so the latest-per-set
choice is made in Python over one ordered read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.tables import eval_results

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


async def import_eval_results(
    engine: AsyncEngine,
    lines: Iterable[str],
    *,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> int:
    """Insert JSONL eval rows in one transaction; returns how many.

    Blank lines are skipped. Any invalid line raises ``ValueError`` naming its
    (1-based) line number, and nothing is inserted.
    """
    now = clock()
    rows = [
        parse_eval_line(line, number, now)
        for number, line in enumerate(lines, start=1)
        if line.strip()
    ]
    if rows:
        async with engine.begin() as connection:
            await connection.execute(eval_results.insert(), rows)
    return len(rows)


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
