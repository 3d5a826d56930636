"""`gateway eval run` against a fake upstream: the table, the eval_results rows the quality
signal reads, replacement on a re-run, and each case's call priced in telemetry."""

from __future__ import annotations

import asyncio
import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from gateway.cli import main as gateway_main
from gateway.config.loader import load_config
from gateway.db.engine import create_engine
from gateway.evals.command import run_eval
from gateway.signals.quality import read_quality
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import ENVIRON, gateway_yaml

CASES: list[dict[str, Any]] = [
    {"id": "capital", "prompt": "Capital of France?", "grader": "exact", "expected": "Paris"},
    {"id": "year", "prompt": "Moon landing year?", "grader": "regex", "pattern": "\\b1969\\b"},
    {
        "id": "person",
        "prompt": "Ada as JSON",
        "grader": "jsonSchema",
        "schema": {
            "type": "object",
            "required": ["name"],
            "properties": {"age": {"type": "integer"}},
        },
    },
    {"id": "city", "prompt": "Where?", "grader": "jsonField", "field": "city", "expected": "Paris"},
    {"id": "pi", "prompt": "Pi?", "grader": "number", "expected": 3.14159, "tolerance": 0.01},
]
RIGHT = {
    "Capital of France?": "Paris",
    "Moon landing year?": "It was 1969.",
    "Ada as JSON": '{"name": "Ada", "age": 36}',
    "Where?": '{"city": "Paris"}',
    "Pi?": "3.14",
}
MODELS = """
  - {id: large, provider: fake, name: large-model, capabilities: [chat],
     price: {input: 3.00, output: 15.00}}
"""


class Setup:
    def __init__(self, tmp_path: Path, upstream: FakeUpstream, database: Path) -> None:
        self.database = database
        self.suite = tmp_path / "basics.jsonl"
        self.suite.write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
        self.config = tmp_path / "gateway.yaml"
        url = f"sqlite+aiosqlite:///{database}"
        self.config.write_text(gateway_yaml(upstream.url, url, models=MODELS), encoding="utf-8")

    def run(self, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
        code = gateway_main(["eval", "run", str(self.suite), *args, "--config", str(self.config)])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.database) as connection:
            return connection.execute(sql).fetchall()


@pytest.fixture
def setup(upstream: FakeUpstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Setup:
    for name, value in ENVIRON.items():
        monkeypatch.setenv(name, value)
    return Setup(tmp_path, upstream, tmp_path / "gateway.db")


async def _quality(database: Path) -> dict[tuple[str, str], float]:
    engine = create_engine(f"sqlite+aiosqlite:///{database}")
    try:
        return await read_quality(engine)
    finally:
        await engine.dispose()


def _table_rows(out: str) -> list[list[str]]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("run "))
    rows = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        rows.append(line.split())
    return rows


def test_a_configuration_run_prints_the_table_records_the_score_and_prices_each_call(
    setup: Setup, upstream: FakeUpstream, capsys: pytest.CaptureFixture[str]
) -> None:
    answers = {**RIGHT, "Pi?": "about 3.2"}  # one wrong answer
    upstream.behave("small-model", answers=answers, prompt_tokens=1000, completion_tokens=500)
    code, out, err = setup.run(capsys, "--configuration", "chat")
    assert code == 0, err
    assert out.splitlines()[0] == "eval set: basics (5 cases)"
    # 5 calls of 1000 input and 500 output tokens at 0.15 / 0.60 per 1M tokens.
    assert _table_rows(out) == [
        ["configuration", "chat", "fake", "small", "5", "4", "0.800", "0.00225"]
    ]
    assert "  pi (number): 3.2 is not within 0.01 of 3.14159" in out.splitlines()
    assert "recorded 1 eval_results row(s) for set basics" in out
    assert upstream.calls["small-model"] == 5
    sent = [r.body for r in upstream.received]
    assert all(body["temperature"] == 0 and body["model"] == "small-model" for body in sent)

    results = setup.query(
        "SELECT set_id, provider, model, grader, prompt_count, passed_count, mean_score"
        " FROM eval_results"
    )
    assert results == [("basics", "fake", "small", "deterministic", 5, 4, 0.8)]
    calls = setup.query(
        "SELECT configuration, served_model, success, actual_input_tokens, actual_cost,"
        " usage_source FROM telemetry ORDER BY id"
    )
    assert len(calls) == 5
    for configuration, served, success, tokens, cost, source in calls:
        assert (configuration, served, success, tokens, source) == (
            "chat",
            "small",
            1,
            1000,
            "provider",
        )
        assert float(cost) == pytest.approx(0.00045)

    # The quality signal reads what the run recorded.
    assert asyncio.run(_quality(setup.database)) == {("fake", "small"): 0.8}


def test_running_again_replaces_the_run_for_the_same_set_and_model(
    setup: Setup, upstream: FakeUpstream, capsys: pytest.CaptureFixture[str]
) -> None:
    upstream.behave("small-model", answers={**RIGHT, "Pi?": "no idea", "Where?": "{}"})
    assert setup.run(capsys, "--configuration", "chat")[0] == 0
    upstream.behave("small-model", answers=RIGHT)
    code, out, _ = setup.run(capsys, "--configuration", "chat")
    assert code == 0
    assert "recorded 1 eval_results row(s) for set basics, replacing 1 earlier" in out
    assert setup.query("SELECT prompt_count, passed_count, mean_score FROM eval_results") == [
        (5, 5, 1.0)
    ]
    # Another set is a run of its own, and is kept.
    code, out, _ = setup.run(capsys, "--configuration", "chat", "--set", "other")
    assert code == 0 and "replacing" not in out
    sets = setup.query("SELECT set_id FROM eval_results ORDER BY set_id")
    assert sets == [("basics",), ("other",)]
    assert len(setup.query("SELECT id FROM telemetry")) == 15


def test_each_model_is_a_run_of_its_own_and_a_failed_call_records_nothing_for_it(
    setup: Setup, upstream: FakeUpstream, capsys: pytest.CaptureFixture[str]
) -> None:
    upstream.behave("small-model", answers=RIGHT)
    upstream.behave("large-model", answers=RIGHT, fail_always=400)
    code, out, _ = setup.run(capsys, "--model", "small", "--model", "large")
    assert code == 1
    rows = _table_rows(out)
    assert rows[0][:7] == ["model", "small", "fake", "small", "5", "5", "1.000"]
    assert rows[1] == ["model", "large", "-", "-", "0", "0", "-", "-"]
    assert "calls that failed (model large), nothing recorded for it:" in out
    assert "  capital: HTTP 400: fake failure 400" in out.splitlines()
    assert setup.query("SELECT model, mean_score FROM eval_results") == [("small", 1.0)]
    configurations = setup.query("SELECT DISTINCT configuration FROM telemetry ORDER BY 1")
    assert configurations == [("eval:large",), ("eval:small",)]


def test_unknown_targets_and_bad_suites_run_nothing(
    setup: Setup, upstream: FakeUpstream, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = setup.run(capsys, "--configuration", "chatt")
    assert code == 2 and "unknown configuration 'chatt'. Valid configurations: chat," in err
    code, _, err = setup.run(capsys, "--model", "smal")
    assert code == 2 and "unknown model 'smal'" in err
    setup.suite.write_text('{"prompt": "x", "grader": "exact"}\n', encoding="utf-8")
    code, _, err = setup.run(capsys, "--configuration", "chat")
    assert code == 1 and "basics.jsonl: line 1: grader exact needs expected" in err
    assert upstream.calls.total() == 0


def test_a_terminal_sees_a_progress_bar(
    setup: Setup, upstream: FakeUpstream, capsys: pytest.CaptureFixture[str]
) -> None:
    upstream.behave("small-model", answers=RIGHT)
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=100)
    config = load_config(setup.config)
    code = asyncio.run(
        run_eval(config, setup.suite, configuration="chat", models=[], console=console)
    )
    assert code == 0
    assert "configuration chat" in screen.getvalue() and "5/5" in screen.getvalue()
    assert "eval set: basics" not in screen.getvalue()  # the table goes to stdout
    assert "eval set: basics" in capsys.readouterr().out
