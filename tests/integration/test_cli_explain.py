"""`gateway explain` and `gateway eval import` against the database a running gateway fills:
the terminal readout is the same decision as the admin endpoint's."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.cli import main as gateway_main
from gateway.routing.readout import CIRCUIT_NOTE
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import ENVIRON, RunningGateway
from tests.support.routed import MESSAGES, candidate, explain, routed_yaml

MODELS = """
  - {id: a, provider: p-a, name: model-a, capabilities: [chat], price: {input: 0.15, output: 0.60}}
  - {id: b, provider: p-b, name: model-b, capabilities: [chat], price: {input: 0.30, output: 1.20}}
  - {id: e, provider: p-b, name: embed-e, capabilities: [embeddings]}
"""
CONFIGURATIONS = """
  - {id: only-a, mode: fixed, model: a}
  - {id: only-b, mode: fixed, model: b}
  - {id: routed, mode: criteria, criteria: {capabilities: [chat], preferLowestCost: true}}
"""


class Setup:
    def __init__(self, config_file: Path, gateway: RunningGateway) -> None:
        self.config_file = config_file
        self.gateway = gateway

    def run(self, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
        code = gateway_main([*args, "--config", str(self.config_file)])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    def explain_json(self, capsys: pytest.CaptureFixture[str], *args: str) -> Any:
        code, out, err = self.run(capsys, "explain", *args, "--json")
        assert code == 0, err
        return json.loads(out)


@pytest.fixture
def setup(
    upstream: FakeUpstream, sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Setup]:
    for name, value in ENVIRON.items():
        monkeypatch.setenv(name, value)
    text = routed_yaml(
        upstream.url,
        sqlite_url,
        models=MODELS,
        configurations=CONFIGURATIONS,
        routing="{policyMode: balanced, callHistory: true}",
    )
    config_file = tmp_path / "gateway.yaml"
    config_file.write_text(text, encoding="utf-8")
    gateway = RunningGateway(text)
    yield Setup(config_file, gateway)
    gateway.stop()


def _traffic(gateway: RunningGateway, upstream: FakeUpstream) -> None:
    upstream.behave("model-a", latency_ms=40, prompt_tokens=1000, completion_tokens=500)
    upstream.behave("model-b", latency_ms=5, prompt_tokens=100, completion_tokens=50)
    client = gateway.client()
    for _ in range(5):
        client.chat.completions.create(model="only-a", messages=MESSAGES)
        client.chat.completions.create(model="only-b", messages=MESSAGES)
    gateway.refresh_signals()


def test_cli_json_is_the_admin_endpoints_decision(
    setup: Setup, upstream: FakeUpstream, capsys: pytest.CaptureFixture[str]
) -> None:
    _traffic(setup.gateway, upstream)
    served = explain(setup.gateway, "routed", "chat")
    assert served["callHistory"] is True and served["costBasis"] == "measured"
    assert setup.explain_json(capsys, "routed", "--operation", "chat") == served
    overridden = setup.explain_json(capsys, "routed", "--operation", "chat", "--mode", "economy")
    assert overridden == explain(setup.gateway, "routed", "chat", mode="economy")
    assert overridden["mode"] == "economy" and overridden["modeOverridden"] is True


def test_cli_table_shows_the_decision_its_history_and_the_circuit_caveat(
    setup: Setup, upstream: FakeUpstream, capsys: pytest.CaptureFixture[str]
) -> None:
    _traffic(setup.gateway, upstream)
    code, out, _ = setup.run(capsys, "explain", "routed", "--operation", "chat")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["configuration:", "routed", "operation:", "chat"]
    assert "mode: balanced" in lines[1] and "call history: read" in lines[1]
    assert "cost basis: measured" in lines[1]
    assert "selected: b on p-b" in lines
    ranked = [line.split()[:3] for line in lines if line[:1].isdigit()]
    assert ranked == [["1", "b", "p-b"], ["2", "a", "p-a"]]
    assert any("5 calls" in line for line in lines if line.startswith("1 "))
    assert "rejected: e (p-b): CAPABILITY_MISSING" in lines
    assert "signals used: health, latency, callCost" in lines
    assert CIRCUIT_NOTE in lines


def test_cli_table_says_no_data_before_any_history(
    setup: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = setup.run(capsys, "explain", "routed", "--operation", "chat")
    assert code == 0
    rows = [line for line in out.splitlines() if line[:1].isdigit()]
    assert len(rows) == 2 and all(row.endswith("no data") for row in rows)
    assert "cost basis: list" in out


def test_cli_explains_a_fixed_configuration_as_deciding_nothing(
    setup: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = setup.run(capsys, "explain", "only-a", "--operation", "chat")
    assert code == 0
    assert "fixed: serves a on p-a; no decision is taken" in out


def test_cli_refuses_an_unknown_configuration_or_operation(
    setup: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = setup.run(capsys, "explain", "nope", "--operation", "chat")
    assert (code, out) == (2, "")
    assert "Unknown configuration 'nope'" in err
    code, out, err = setup.run(capsys, "explain", "route", "--operation", "chat")
    assert (code, out) == (2, "")
    assert "Unknown configuration 'route'. Valid configurations: routed, " in err
    code, out, err = setup.run(capsys, "explain", "routed", "--operation", "dance")
    assert (code, out) == (1, "")
    assert "Unknown operation 'dance'" in err


def test_eval_import_records_quality_the_readout_then_shows(
    setup: Setup, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "evals.jsonl"
    rows = [
        {"set_id": "s1", "provider": "p-a", "model": "a", "prompt_count": 4,
         "passed_count": 1, "mean_score": 0.25},
        {"set_id": "s2", "provider": "p-a", "model": "a", "prompt_count": 4,
         "passed_count": 3, "mean_score": 0.75},
    ]  # fmt: skip
    results.write_text("\n".join(json.dumps(row) for row in rows) + "\n\n")
    code, out, _ = setup.run(capsys, "eval", "import", str(results))
    assert code == 0 and out.strip() == f"imported 2 eval result(s) from {results}"

    readout = setup.explain_json(capsys, "routed", "--operation", "chat")
    assert candidate(readout, "a")["signals"]["quality"] == pytest.approx(0.5)  # mean of sets
    assert candidate(readout, "b")["signals"]["quality"] is None
    assert "quality" in readout["signalsUsed"]


def test_eval_import_of_a_bad_line_records_nothing(
    setup: Setup, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "evals.jsonl"
    good = {"set_id": "s1", "provider": "p-b", "model": "b", "prompt_count": 4,
            "passed_count": 4, "mean_score": 1.0}  # fmt: skip
    results.write_text(json.dumps(good) + "\n" + json.dumps({**good, "mean_score": 7}) + "\n")
    code, _, err = setup.run(capsys, "eval", "import", str(results))
    assert code == 1 and "line 2" in err and "mean_score" in err
    readout = setup.explain_json(capsys, "routed", "--operation", "chat")
    assert all(c["signals"]["quality"] is None for c in readout["candidates"])


def test_eval_import_reports_every_bad_line_warns_on_unknown_ids_and_is_idempotent(
    setup: Setup, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "evals.jsonl"
    good = {"set_id": "s1", "provider": "p-a", "model": "a", "prompt_count": 4,
            "passed_count": 2, "mean_score": 0.5, "run_at": "2026-11-01T00:00:00Z"}  # fmt: skip
    bad = [json.dumps(good), "{", json.dumps({**good, "mean_score": 2}), json.dumps(["x"])]
    results.write_text("\n".join(bad) + "\n")
    code, _, err = setup.run(capsys, "eval", "import", str(results))
    assert code == 1
    assert [f"{results}: line {n}:" in err for n in (2, 3, 4)] == [True] * 3
    assert "3 bad line(s): nothing imported" in err

    stranger = {**good, "provider": "p-x", "set_id": "s2"}
    typo = {**good, "model": "aa", "set_id": "s3"}
    results.write_text("\n".join(json.dumps(r) for r in (good, stranger, typo)) + "\n")
    code, out, err = setup.run(capsys, "eval", "import", str(results))
    assert code == 0 and out.strip() == f"imported 3 eval result(s) from {results}"
    assert f"{results}: warning: line 2: provider 'p-x' is not in the config" in err
    assert "line 3: provider 'p-a' has no model 'aa' in the config" in err

    code, out, _ = setup.run(capsys, "eval", "import", str(results))
    assert code == 0
    assert out.strip() == f"imported 0 eval result(s) from {results} (3 already recorded, skipped)"


def test_the_installed_command_prints_the_readout(setup: Setup) -> None:
    command = Path(sys.executable).with_name("gateway")
    done = subprocess.run(
        [
            *(str(command), "explain", "routed", "--operation", "chat"),
            *("--config", str(setup.config_file), "--json"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == explain(setup.gateway, "routed", "chat")
