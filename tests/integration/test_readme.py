"""The README's and the docs' examples work as written: the complete example of
docs/configuration.md and the README's quick start pass `gateway check`, the README's
OpenAI SDK example runs against a real server, and every code block of README.md and
docs/configuration.md runs in order, as a reader following the page would run it, unless
it carries a `<!-- doc-test: not run (reason) -->` marker (tests/support/doc_session.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.cli import main
from tests.support.doc_session import DocSession, Ran, doc_blocks
from tests.support.fake_upstream import FakeUpstream
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
            env={**os.environ, "GATEWAY_KEY": "any: the example is keyless"},
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
                [sys.executable, "-c", script],
                capture_output=True,
                text=True,
                timeout=60,
                env={**os.environ, "GATEWAY_KEY": "any: the example is keyless"},
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


def _complete_example_on(upstream: FakeUpstream, database: str, yaml: str) -> RunningGateway:
    """The complete example with its providers on the fake upstream and its database in a
    temporary folder; nothing else changed."""
    for real, fake in (
        ("https://api.openai.com/v1", f"{upstream.url}/v1"),
        ("https://api.anthropic.com/v1", f"{upstream.url}/anthropic/v1"),
        ("sqlite+aiosqlite:///gateway.db", database),
    ):
        assert real in yaml
        yaml = yaml.replace(real, fake)
    return RunningGateway(yaml, EXAMPLE_ENV)


def _smart_chat_while_openai_fails(
    upstream: FakeUpstream, tmp_path: Path, yaml: str
) -> tuple[int, dict[str, str], list[dict[str, Any]]]:
    upstream.behave("gpt-4o-mini", fail_always=500)
    gateway = _complete_example_on(upstream, f"sqlite+aiosqlite:///{tmp_path / 'g.db'}", yaml)
    try:
        answer = httpx.post(
            f"{gateway.url}/v1/chat/completions",
            headers={"authorization": f"Bearer {EXAMPLE_ENV['ALICE_KEY']}"},
            json={"model": "smart-chat", "messages": [{"role": "user", "content": "Hi"}]},
            timeout=30,
        )
        rows = gateway.rows(expect=1)
    finally:
        gateway.stop()
    return answer.status_code, dict(answer.headers), rows


def test_the_complete_example_falls_back_to_another_provider_when_openai_fails(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    example = markdown_block(CONFIGURATION_DOC, "A complete example", "yaml")
    status, headers, rows = _smart_chat_while_openai_fails(upstream, tmp_path, example)
    assert status == 200
    assert headers["x-gateway-provider"] == "claude"
    assert headers["x-gateway-model"] == "claude-haiku"
    assert upstream.calls["gpt-4o-mini"] == 3  # the first attempt and maxRetries: 2
    assert upstream.calls["claude-3-5-haiku-latest"] == 1
    assert rows[-1]["fallback_attempts"] == 1


def test_a_fallback_on_the_same_provider_does_not_survive_its_failure(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    """What the doc says the cross-provider fallback avoids: 5 attempts, then 502."""
    example = markdown_block(CONFIGURATION_DOC, "A complete example", "yaml")
    fixed = re.search(r"\{id: backup-chat, mode: fixed, model: claude-haiku\}", example)
    assert fixed, "the complete example's backup-chat is no longer fixed on claude-haiku"
    same_provider = example.replace(
        fixed.group(0), "{id: backup-chat, mode: fixed, model: gpt-4o-mini}"
    )
    status, _, _ = _smart_chat_while_openai_fails(upstream, tmp_path, same_provider)
    assert status == 502
    assert upstream.calls["gpt-4o-mini"] == 5  # the fifth failure opened the circuit
    assert upstream.calls["claude-3-5-haiku-latest"] == 0


def _page_session(tmp_path: Path, upstream: FakeUpstream, **environ: str) -> DocSession:
    return DocSession(
        tmp_path,
        urls={
            "https://api.openai.com/v1": f"{upstream.url}/v1",
            "https://api.anthropic.com/v1": f"{upstream.url}/anthropic/v1",
        },
        check_environ={**QUICK_START_ENV, **EXAMPLE_ENV},
        environ=environ,
    )


def _report(ran: list[Ran], session: DocSession) -> str:
    lines = [
        f"line {r.block.line} ({r.block.language}) exit {r.returncode}:\n{r.output}" for r in ran
    ]
    return "\n".join(lines) + "\nserve.log:\n" + session.served_log()


def _runs_every_unmarked_block(text: str, session: DocSession) -> list[Ran]:
    try:
        ran = session.run_page(text)
    finally:
        session.close()
    unmarked = [b for b in doc_blocks(text) if b.not_run is None]
    assert [r.block for r in ran] == unmarked, _report(ran, session)
    assert all(r.returncode == 0 for r in ran), _report(ran, session)
    return ran


def test_every_readme_block_runs_in_order_or_says_why_not(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    """The README followed to the letter: the quick start's config.yaml, its commands, the
    SDK snippets, explain and the eval runs, one set of ids from the first to the last."""
    for model in ("gpt-4o-mini", "gpt-4.1-mini"):
        upstream.behave(
            model, answers={"Capital of France? One word.": "Paris", "Pi to two decimals?": "3.14"}
        )
    session = _page_session(tmp_path, upstream)
    ran = _runs_every_unmarked_block(README, session)
    by_language = {r.block.language for r in ran}
    assert by_language == {"yaml", "sh", "python"}
    sdk = next(r for r in ran if r.block.language == "python")
    whole, streamed, cost = sdk.output.splitlines()
    assert re.fullmatch(r"Hello from the fake upstream\. [0-9.e-]+", whole), sdk.output
    assert streamed == "Hello from the fake upstream."
    assert re.fullmatch(r"cost: [0-9.e-]+", cost), sdk.output
    # The anthropic SDK's snippet: a Messages call translated to the chat provider.
    messages = [r for r in ran if r.block.language == "python"][1]
    assert re.fullmatch(r"Hello from the fake upstream\. [0-9.e-]+\n", messages.output)
    # Everything reached the fake: the SDKs' three calls and the eval runs' 2 + 2 × 2 cases.
    assert upstream.calls["gpt-4o-mini"] == 3 + 2 + 2
    assert upstream.calls["gpt-4.1-mini"] == 2
    skipped = [b for b in doc_blocks(README) if b.not_run is not None]
    assert len(skipped) == 4 and all(b.language == "sh" for b in skipped)


def test_every_configuration_doc_block_runs_or_says_why_not(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    session = _page_session(tmp_path, upstream, **EXAMPLE_ENV)
    ran = _runs_every_unmarked_block(CONFIGURATION_DOC, session)
    check = next(r for r in ran if r.block.language == "sh")
    assert check.output.strip() == "config.yaml: OK"


def test_an_unmarked_block_without_a_runner_fails_the_session(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    page = "```text\nsome output\n```\n\n<!-- doc-test: not run (an example) -->\n```text\nx\n```\n"
    blocks = doc_blocks(page)
    assert [b.not_run for b in blocks] == [None, "an example"]
    session = _page_session(tmp_path, upstream)
    with pytest.raises(AssertionError, match="no runner for a ```text block"):
        _runs_every_unmarked_block(page, session)


def test_a_block_that_fails_fails_the_session(upstream: FakeUpstream, tmp_path: Path) -> None:
    page = (
        "```sh\ngateway explain no-such-configuration --operation chat --config config.yaml\n```\n"
    )
    session = _page_session(tmp_path, upstream)
    with pytest.raises(AssertionError, match="exit"):
        _runs_every_unmarked_block(page, session)
