"""The README's and the docs' examples work as written: the complete example of
docs/configuration.md and the README's quick start pass `gateway check`, and the README's
OpenAI SDK example runs against a real server."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.cli import main
from tests.support.gateway import RunningGateway

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CONFIGURATION_DOC = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
EXAMPLE_ENV = {
    "GATEWAY_ADMIN_KEY": "admin-secret-123",
    "ALICE_KEY": "alice-secret-456",
    "OPENAI_API_KEY": "sk-openai-789",
    "ANTHROPIC_API_KEY": "sk-ant-012",
}
QUICK_START_ENV = {"GATEWAY_KEY": "gateway-secret-345", "OPENAI_API_KEY": "sk-openai-789"}


def markdown_block(text: str, heading: str, language: str) -> str:
    """The first ```language block of the section under ``## heading``."""
    assert f"\n## {heading}\n" in text, f"no section '## {heading}'"
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(rf"```{language}\n(.*?)```", section, re.DOTALL)
    assert found, f"no {language} block under '## {heading}'"
    return found.group(1)


def readme_block(heading: str, language: str) -> str:
    return markdown_block(README, heading, language)


def _passes_check_and_needs(
    yaml: str,
    env: dict[str, str],
    needed: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(yaml)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(["check", "--config", str(config)]) == 0, capsys.readouterr().out
    assert capsys.readouterr().out.strip().endswith(": OK")

    monkeypatch.delenv(needed)  # the check is real: a variable it names is needed
    assert main(["check", "--config", str(config)]) == 1
    assert needed in capsys.readouterr().out


def test_the_complete_example_of_the_configuration_doc_passes_gateway_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    example = markdown_block(CONFIGURATION_DOC, "A complete example", "yaml")
    _passes_check_and_needs(
        example, EXAMPLE_ENV, "ANTHROPIC_API_KEY", tmp_path, monkeypatch, capsys
    )


def test_the_readme_quick_start_passes_gateway_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    quick_start = readme_block("Quick start with a real provider", "yaml")
    _passes_check_and_needs(
        quick_start, QUICK_START_ENV, "GATEWAY_KEY", tmp_path, monkeypatch, capsys
    )


def test_the_sdk_example_runs_against_the_example_server(tmp_path: Path) -> None:
    database = f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}"
    example = (ROOT / "config.example.yaml").read_text()
    gateway = RunningGateway(example.replace("sqlite+aiosqlite:///gateway.db", database))
    code = readme_block("Point the OpenAI SDK at it", "python")
    assert 'base_url="http://127.0.0.1:4000/v1"' in code
    try:
        result = subprocess.run(
            [sys.executable, "-c", code.replace("http://127.0.0.1:4000", gateway.url)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        gateway.stop()
    assert result.returncode == 0, result.stderr
    whole, streamed, cost = result.stdout.splitlines()
    assert re.fullmatch(r"echo: Hello [0-9.e-]+", whole), whole
    assert streamed == "echo: Hi"
    assert re.fullmatch(r"cost: [0-9.e-]+", cost), cost


def test_the_sdk_example_reads_the_cost_of_a_cache_hit_too(tmp_path: Path) -> None:
    """Run twice on a cached configuration, the example's second whole answer is a hit:
    its `usage.model_extra["cost"]` is there, and 0."""
    database = f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}"
    code = readme_block("Point the OpenAI SDK at it", "python")
    (configuration,) = set(re.findall(r'model="([^"]+)"', code))
    example = (ROOT / "config.example.yaml").read_text()
    line = f"  - {{id: {configuration}, "
    assert line in example
    cached = example.replace(line, f"{line}cache: {{ttlSeconds: 60}}, ")
    gateway = RunningGateway(cached.replace("sqlite+aiosqlite:///gateway.db", database))
    script = code.replace("http://127.0.0.1:4000", gateway.url)
    try:
        runs = [
            subprocess.run(
                [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
            )
            for _ in range(2)
        ]
    finally:
        gateway.stop()
    for run in runs:
        assert run.returncode == 0, run.stderr
    miss, hit = (run.stdout.splitlines()[0] for run in runs)
    assert re.fullmatch(r"echo: Hello [0-9.e-]+", miss) and not miss.endswith(" 0"), miss
    assert hit == "echo: Hello 0"
