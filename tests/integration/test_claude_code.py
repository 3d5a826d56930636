"""Claude Code itself through the gateway: ``claude -p … --output-format json``, headless,
with ``ANTHROPIC_BASE_URL`` at the gateway and a gateway key as ``ANTHROPIC_API_KEY``,
against a scripted model that makes it run its ``Read`` tool, natively (an Anthropic
provider) and translated (an OpenAI-compatible one).

The binary is npm's ``@anthropic-ai/claude-code``; the test looks for it where
``npm install --prefix .cache/claude-code @anthropic-ai/claude-code`` puts it (the repo's
ignored ``.cache/``), in ``$GATEWAY_TEST_CLAUDE_CODE``, or on ``PATH``, and is skipped
when it is absent: installing it needs the npm registry, which CI may not reach. Its
telemetry, error reporting, auto-update and other non-essential traffic are off, and its
``HOME`` is a temporary folder, so nothing but the gateway is contacted.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.gateway import TEST_KEY, RunningGateway, running_gateway
from tests.support.scripted_agent import DONE, ScriptedAgentUpstream

ROOT = Path(__file__).resolve().parents[2]
SECRET = "violet-harbour-42"


def _claude() -> str | None:
    candidates = [
        os.environ.get("GATEWAY_TEST_CLAUDE_CODE"),
        str(ROOT / ".cache" / "claude-code" / "node_modules" / ".bin" / "claude"),
        shutil.which("claude"),
    ]
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


CLAUDE = _claude()
pytestmark = pytest.mark.skipif(
    CLAUDE is None,
    reason="Claude Code is not installed: npm install --prefix .cache/claude-code "
    "@anthropic-ai/claude-code (it needs the npm registry)",
)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text(f"{SECRET}\n", encoding="utf-8")
    return folder


@pytest.fixture
def scripted(workdir: Path) -> Iterator[ScriptedAgentUpstream]:
    upstream = ScriptedAgentUpstream(str(workdir / "notes.txt"))
    yield upstream
    upstream.close()


@pytest.fixture
def gateway(scripted: ScriptedAgentUpstream, sqlite_url: str) -> Iterator[RunningGateway]:
    yaml_text = f"""
server: {{requestTimeoutSeconds: 60}}
database: {{url: "{sqlite_url}"}}
auth:
  keys: [{{id: alice, key: "${{ALICE_KEY}}"}}]
providers:
  - {{id: claude, adapter: anthropic, baseUrl: "{scripted.url}/anthropic/v1", apiKey: "sk-ant-x"}}
  - {{id: openai-co, adapter: openai, baseUrl: "{scripted.url}/v1", apiKey: "sk-o"}}
models:
  - {{id: sonnet, provider: claude, name: claude-sonnet-4-5, capabilities: [chat, tools],
     price: {{input: 3.00, output: 15.00}}}}
  - {{id: gpt, provider: openai-co, name: gpt-coder-model, capabilities: [chat, tools],
     price: {{input: 1.00, output: 2.00}}}}
configurations:
  - {{id: claude-sonnet, mode: fixed, model: sonnet}}
  - {{id: gpt-coder, mode: fixed, model: gpt}}
"""
    with running_gateway(yaml_text) as running:
        yield running


def _run_claude(gateway: RunningGateway, workdir: Path, configuration: str) -> dict[str, object]:
    home = workdir.parent / "home"
    home.mkdir(exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": gateway.url,
        "ANTHROPIC_API_KEY": TEST_KEY,
        "ANTHROPIC_MODEL": configuration,
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": configuration,
        "ANTHROPIC_SMALL_FAST_MODEL": configuration,
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    assert CLAUDE is not None
    done = subprocess.run(
        [
            CLAUDE,
            "-p",
            "Read the file notes.txt and tell me what it says.",
            "--output-format",
            "json",
            "--model",
            configuration,
        ],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    answer: dict[str, object] = json.loads(done.stdout)
    return answer


@pytest.mark.parametrize(
    ("configuration", "path"),
    [("claude-sonnet", "/anthropic/v1/messages"), ("gpt-coder", "/v1/chat/completions")],
)
def test_claude_code_runs_a_tool_through_the_gateway(
    gateway: RunningGateway,
    scripted: ScriptedAgentUpstream,
    workdir: Path,
    configuration: str,
    path: str,
) -> None:
    answer = _run_claude(gateway, workdir, configuration)
    assert answer.get("is_error") is False, answer
    result = str(answer.get("result"))
    # The scripted model quotes the tool's result: Read ran and its output went back.
    assert result.startswith(DONE) and SECRET in result, answer
    bodies = [body for seen, body in scripted.received if seen == path]
    assert bodies, [seen for seen, _ in scripted.received]
    rows = gateway.rows()
    assert rows and {r["inbound_api"] for r in rows} == {"messages"}
    assert all(r["success"] == 1 for r in rows), [
        (r["http_status"], r["error_class"]) for r in rows
    ]
    assert {r["configuration"] for r in rows} == {configuration}
