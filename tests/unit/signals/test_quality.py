"""The quality signal and the eval-results import."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.tables import eval_results
from gateway.signals.quality import (
    EvalImportError,
    import_eval_results,
    parse_eval_line,
    read_quality,
    replace_eval_runs,
)
from tests.unit.telemetry.factory import NOW


def _line(**overrides: Any) -> str:
    row: dict[str, Any] = {
        "set_id": "math",
        "provider": "openai-main",
        "model": "gpt-4o-mini",
        "prompt_count": 10,
        "passed_count": 8,
        "mean_score": 0.8,
        "run_at": "2026-11-01T00:00:00Z",
    }
    row.update(overrides)
    return json.dumps(row)


async def _eval_rows(engine: AsyncEngine) -> int:
    async with engine.connect() as connection:
        query = select(func.count()).select_from(eval_results)
        return int((await connection.execute(query)).scalar_one())


async def test_quality_is_the_mean_over_sets_of_each_sets_latest_score(
    engine: AsyncEngine,
) -> None:
    lines = [
        _line(set_id="math", mean_score=0.2, run_at="2026-11-01T00:00:00Z"),
        _line(set_id="math", mean_score=0.6, run_at="2026-11-02T00:00:00Z"),
        _line(set_id="code", mean_score=1.0, run_at="2026-10-01T00:00:00+02:00"),
        _line(model="other", mean_score=0.5),
    ]
    assert (await import_eval_results(engine, lines)).inserted == 4
    quality = await read_quality(engine)
    assert quality[("openai-main", "gpt-4o-mini")] == pytest.approx(0.8)
    assert quality[("openai-main", "other")] == pytest.approx(0.5)


async def test_graders_other_than_deterministic_never_count(engine: AsyncEngine) -> None:
    lines = [
        _line(mean_score=0.4),
        _line(grader="llm-judge", mean_score=1.0, run_at="2026-11-09T00:00:00Z"),
        _line(model="judged-only", grader="llm-judge"),
    ]
    await import_eval_results(engine, lines)
    assert await read_quality(engine) == {("openai-main", "gpt-4o-mini"): pytest.approx(0.4)}


async def test_an_invalid_line_names_its_number_and_nothing_is_imported(
    engine: AsyncEngine,
) -> None:
    lines = [_line(), "", _line(mean_score=1.5)]
    with pytest.raises(ValueError, match=r"^line 3: mean_score must be a number between 0 and 1"):
        await import_eval_results(engine, lines)
    assert await _eval_rows(engine) == 0


async def test_every_invalid_line_is_reported_not_just_the_first(engine: AsyncEngine) -> None:
    lines = [_line(), "{oops", _line(), _line(passed_count=99), "", _line(grader="")]
    with pytest.raises(EvalImportError) as raised:
        await import_eval_results(engine, lines)
    assert [p.split(":")[0] for p in raised.value.problems] == ["line 2", "line 4", "line 6"]
    assert "not valid JSON" in raised.value.problems[0]
    assert await _eval_rows(engine) == 0


async def test_importing_the_same_results_again_adds_nothing(engine: AsyncEngine) -> None:
    lines = [_line(), _line(set_id="code"), _line(grader="llm-judge")]
    first = await import_eval_results(engine, lines)
    assert (first.inserted, first.already_there) == (3, 0)
    again = await import_eval_results(engine, [*lines, _line(run_at="2026-11-02T00:00:00Z")])
    assert (again.inserted, again.already_there) == (1, 3)
    assert await _eval_rows(engine) == 4
    # The same instant in another offset is the same run.
    shifted = await import_eval_results(engine, [_line(run_at="2026-11-01T01:00:00+01:00")])
    assert (shifted.inserted, shifted.already_there) == (0, 1)


async def test_a_line_without_run_at_is_counted_as_undated(engine: AsyncEngine) -> None:
    row = json.loads(_line())
    del row["run_at"]
    done = await import_eval_results(engine, [json.dumps(row), _line()], clock=lambda: NOW)
    assert (done.inserted, done.undated) == (2, 1)


async def test_ids_the_config_does_not_know_are_imported_with_a_warning(
    engine: AsyncEngine,
) -> None:
    known = {"openai-main": {"gpt-4o-mini"}}
    lines = [_line(), _line(provider="nobody"), _line(model="gpt-5-typo")]
    done = await import_eval_results(engine, lines, known=known)
    assert done.inserted == 3
    assert done.warnings == [
        "line 2: provider 'nobody' is not in the config",
        "line 3: provider 'openai-main' has no model 'gpt-5-typo' in the config",
    ]


async def test_grader_defaults_to_deterministic_and_run_at_to_now(engine: AsyncEngine) -> None:
    row = json.loads(_line())
    del row["run_at"]
    await import_eval_results(engine, [json.dumps(row)], clock=lambda: NOW)
    async with engine.connect() as connection:
        stored = (await connection.execute(select(eval_results))).mappings().one()
    assert (stored["grader"], stored["run_at"]) == ("deterministic", NOW)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "line 7: not valid JSON"),
        ("[1, 2]", "line 7: expected a JSON object"),
        (_line(set_id=""), "line 7: set_id must be a non-empty string"),
        (_line(passed_count=11), "line 7: passed_count must be an integer between 0"),
        (_line(prompt_count=True), "line 7: prompt_count must be an integer"),
        (_line(mean_score="0.5"), "line 7: mean_score must be a number"),
        (_line(run_at="yesterday"), "line 7: run_at is not ISO-8601"),
        (_line(score=1), "line 7: unknown field score"),
        (json.dumps({"set_id": "s"}), "line 7: missing provider, model, prompt_count"),
    ],
)
def test_each_validation_error_names_the_line(line: str, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        parse_eval_line(line, 7, NOW)
    assert str(raised.value).startswith(message)


def test_a_run_at_without_offset_is_taken_as_utc() -> None:
    row = parse_eval_line(_line(run_at="2026-11-01T10:00:00"), 1, NOW)
    assert row["run_at"] == datetime(2026, 11, 1, 10, 0, tzinfo=UTC)


def _run(set_id: str, model: str, score: float, day: int, grader: str = "deterministic") -> Any:
    return {
        "set_id": set_id,
        "provider": "p",
        "model": model,
        "grader": grader,
        "prompt_count": 10,
        "passed_count": int(score * 10),
        "mean_score": score,
        "run_at": datetime(2026, 11, day, tzinfo=UTC),
    }


async def test_a_recorded_run_replaces_every_earlier_run_of_its_set_and_model(
    engine: AsyncEngine,
) -> None:
    imported = [
        _line(set_id="math", provider="p", model="m", run_at=f"2026-11-0{d}T00:00:00Z")
        for d in (1, 2)
    ]
    await import_eval_results(engine, imported)
    kept = [
        _run("math", "other", 0.3, 1),
        _run("code", "m", 0.2, 1),
        _run("math", "m", 0.1, 1, "judge"),
    ]
    assert await replace_eval_runs(engine, kept) == 0
    assert await replace_eval_runs(engine, [_run("math", "m", 0.9, 5)]) == 2
    async with engine.connect() as connection:
        query = select(
            eval_results.c.set_id,
            eval_results.c.model,
            eval_results.c.grader,
            eval_results.c.mean_score,
        ).order_by(eval_results.c.id)
        rows = [tuple(r) for r in (await connection.execute(query)).all()]
    assert sorted(rows) == sorted(
        [
            ("math", "other", "deterministic", 0.3),
            ("code", "m", "deterministic", 0.2),
            ("math", "m", "judge", 0.1),
            ("math", "m", "deterministic", 0.9),
        ]
    )
    quality = await read_quality(engine)
    assert quality[("p", "m")] == pytest.approx((0.9 + 0.2) / 2)
