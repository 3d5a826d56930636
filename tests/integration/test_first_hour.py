"""The first hour with the `gateway` command: its version and help, serve's overrides, and
what the server logs (one access line per call, text or JSON, warnings worth acting on)."""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.cli import main
from gateway.cli.parser import command_parser
from tests.support.process import free_port, serving

ROOT = Path(__file__).resolve().parents[2]
HELLO = [{"role": "user", "content": "hello"}]


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"gateway {metadata.version('llm-gateway')}"


def _commands(parser: argparse.ArgumentParser, path: str = "gateway") -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, child in action.choices.items():
                found.append((f"{path} {name}", helps.get(name)))
                found.extend(_commands(child, f"{path} {name}"))
        elif not isinstance(action, argparse._HelpAction):
            found.append((f"{path} {'/'.join(action.option_strings) or action.dest}", action.help))
    return found


def test_every_command_and_option_has_help_text() -> None:
    entries = _commands(command_parser())
    assert len(entries) > 20
    assert ("gateway serve --host", "address to bind, instead of the config's server.host") in [
        (name, text) for name, text in entries
    ]
    assert [name for name, text in entries if not text] == []


def _example(tmp_path: Path) -> Path:
    config = tmp_path / "config.example.yaml"
    shutil.copy(ROOT / "config.example.yaml", config)
    return config


def test_serve_takes_host_and_port_from_the_command_line_and_logs_each_call(
    tmp_path: Path,
) -> None:
    port = free_port()
    args = ("--host", "127.0.0.2", "--port", str(port))
    with serving(_example(tmp_path), *args, host="127.0.0.2", port=port) as served:
        ok = httpx.post(
            f"{served.base}/v1/chat/completions",
            json={"model": "chat", "messages": HELLO},
            headers={"x-request-id": "first-call"},
        )
        assert ok.status_code == 200
        unknown = httpx.post(
            f"{served.base}/v1/chat/completions", json={"model": "chaat", "messages": HELLO}
        )
        assert unknown.status_code == 404
        message = unknown.json()["error"]["message"]
        assert message.startswith("The model 'chaat' does not exist. Valid models: chat, ")
    lines = served.stop().splitlines()
    access = [line for line in lines if " gateway.access: " in line]
    assert len(access) == 2, lines
    assert (
        "POST /v1/chat/completions 200 configuration=chat model=demo-small latency_ms="
        in (access[0])
    )
    assert access[0].endswith("request_id=first-call")
    assert "POST /v1/chat/completions 404 configuration=chaat model=- " in access[1]
    assert any(f"uvicorn.error: Uvicorn running on http://127.0.0.2:{port}" in x for x in lines)
    text = "\n".join(lines)
    assert "Context impl" not in text and "Will assume" not in text
    assert "setup plugin" not in text


def test_json_log_format_makes_every_line_json_and_never_logs_a_key_or_a_body(
    tmp_path: Path,
) -> None:
    port = free_port()
    config = tmp_path / "gateway.yaml"
    config.write_text(
        f"server: {{port: {port}, workers: 2, logFormat: json}}\n"  # each worker logs JSON too
        f'database: {{url: "sqlite+aiosqlite:///{tmp_path / "g.db"}"}}\n'
        'auth: {keys: [{id: alice, key: "${ALICE_KEY}"}]}\n'
        "providers: [{id: demo, adapter: echo}]\n"
        "models: [{id: m, provider: demo, capabilities: [chat]}]\n"
        "configurations: [{id: c, mode: fixed, model: m}]\n"
    )
    secret = "sk-alice-key-0123456789"
    body = {"model": "c", "messages": [{"role": "user", "content": "the-prompt-text"}]}
    with serving(config, port=port, env={"ALICE_KEY": secret}) as served:
        url = f"{served.base}/v1/chat/completions"
        headers = {"authorization": f"Bearer {secret}", "x-request-id": "json-call"}
        assert httpx.post(url, json=body, headers=headers).status_code == 200
        assert httpx.post(url, json=body).status_code == 401
    output = served.stop()
    assert secret not in output and "the-prompt-text" not in output and "echo:" not in output
    records = [json.loads(line) for line in output.splitlines() if line.strip()]
    assert {"time", "level", "logger", "message"} <= set(records[0])
    access = [r for r in records if r["logger"] == "gateway.access"]
    assert [(r["status"], r["configuration"]) for r in access] == [(200, "c"), (401, None)]
    served_call = access[0]
    assert served_call["method"] == "POST" and served_call["path"] == "/v1/chat/completions"
    assert served_call["servedModel"] == "m" and served_call["requestId"] == "json-call"
    assert served_call["latencyMs"] > 0
    assert any(r["logger"].startswith("uvicorn") for r in records)


def test_access_log_off_silences_the_access_lines_alone_in_every_worker(tmp_path: Path) -> None:
    port = free_port()
    database = tmp_path / "g.db"
    config = tmp_path / "gateway.yaml"
    config.write_text(
        f"server: {{port: {port}, workers: 2, accessLog: false}}\n"
        f'database: {{url: "sqlite+aiosqlite:///{database}"}}\n'
        "auth: {allowUnauthenticated: true}\n"
        "providers: [{id: demo, adapter: echo}]\n"
        "models: [{id: m, provider: demo, capabilities: [chat]}]\n"
        "configurations: [{id: c, mode: fixed, model: m}]\n"
    )
    body = {"model": "c", "messages": HELLO}
    with serving(config, port=port) as served:
        url = f"{served.base}/v1/chat/completions"
        statuses = [httpx.post(url, json=body).status_code for _ in range(6)]
        statuses.append(httpx.post(url, json={**body, "model": "nope"}).status_code)
        assert statuses == [200] * 6 + [404]
    lines = served.stop().splitlines()
    assert [line for line in lines if "gateway.access" in line] == []
    assert any(f"Uvicorn running on http://127.0.0.1:{port}" in line for line in lines)
    with sqlite3.connect(database) as db:  # each call still has its telemetry row
        assert db.execute("select http_status, count(*) from telemetry group by 1").fetchall() == [
            (200, 6)
        ]


def test_removing_allow_unauthenticated_from_the_example_says_what_to_do(tmp_path: Path) -> None:
    config = _example(tmp_path)
    text = config.read_text()
    assert "  allowUnauthenticated: true\n" in text
    config.write_text(text.replace("  allowUnauthenticated: true\n", ""))
    assert main(["check", "--config", str(config)]) == 0  # a valid file, but no way in
    result = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "serve", "--config", str(config)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert result.returncode == 1
    for advice in ("auth.keys", "gateway keys hash", "auth.allowUnauthenticated: true"):
        assert advice in result.stderr
