"""The `gateway` command: check, keys hash, db upgrade, serve (the example config as shipped)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from gateway.cli import main
from gateway.domain.keys import hash_key

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_check_accepts_the_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--config", str(ROOT / "config.example.yaml")]) == 0
    assert "OK" in capsys.readouterr().out


def test_check_prints_every_problem_with_its_path_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(
        """
providers:
  - {id: p, adapter: openai, baseUrl: "http://127.0.0.1:1/v1", apiKey: "${MISSING_SECRET}"}
models:
  - {id: m, provider: p, capabilities: [chat, teleport], price: {input: -1, output: 0}}
configurations:
  - {id: c, mode: fixed, model: nope, fallback: [ghost]}
routing: {listPriceCeiling: 0, surprise: 1}
"""
    )
    assert main(["check", "--config", str(config)]) == 1
    out = capsys.readouterr().out
    for path in (
        "providers[0].apiKey",
        "models[0].capabilities[1]",
        "models[0].price.input",
        "configurations[0].model",
        "configurations[0].fallback[0]",
        "routing.listPriceCeiling",
        "routing.surprise",
    ):
        assert re.search(rf"{re.escape(path)}: ", out), (path, out)
    assert "MISSING_SECRET" in out


def _check_output(config: Path, environ: dict[str, str] | None = None) -> tuple[int, str]:
    """``gateway check`` run as a user runs it, from the file's folder by its relative name."""
    done = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "check", "--config", config.name],
        cwd=config.parent,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(environ or {})},
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def test_check_suggests_the_key_meant_and_names_the_variable_behind_a_bad_value(
    tmp_path: Path,
) -> None:
    config = tmp_path / "typo.yaml"
    config.write_text(
        """
server: {port: "${PORT}"}
providers: [{id: p, adapter: echo}]
models: [{id: m, provider: p, contextLenght: 8000}]
"""
    )

    code, out = _check_output(config, {"PORT": "s3cret-port-value"})

    assert code == 1
    assert out.splitlines() == [
        "typo.yaml: server.port: expected int, got str (from ${PORT})",
        "typo.yaml: models[0].contextLenght: unknown key (did you mean 'contextLength'?)",
        "2 problem(s) found.",
    ]
    assert "s3cret-port-value" not in out


def test_check_names_the_file_once_and_the_yaml_path_of_a_syntax_error(tmp_path: Path) -> None:
    config = tmp_path / "broken.yaml"
    config.write_text("server:\n  port: 4000\n  host: [127.0.0.1\nproviders: []\n")

    code, out = _check_output(config)

    assert code == 1
    assert out.splitlines() == [
        "broken.yaml: server.host: invalid YAML at line 4, column 10: "
        "expected ',' or ']', but got ':'",
        "1 problem(s) found.",
    ]


def test_keys_hash_reads_standard_input() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "keys", "hash"],
        input="sk-my-secret\n",
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == f"sha256:{hash_key('sk-my-secret')}"
    assert "sk-my-secret" not in result.stdout + result.stderr


def test_db_upgrade_creates_the_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        f'database: {{url: "sqlite+aiosqlite:///{tmp_path / "g.db"}"}}\n'
        "auth: {allowUnauthenticated: true}\n"
        "providers: [{id: demo, adapter: echo}]\n"
        "models: [{id: m, provider: demo}]\n"
        "configurations: [{id: c, mode: fixed, model: m}]\n"
    )
    assert main(["db", "upgrade", "--config", str(config)]) == 0
    applied = capsys.readouterr().out.splitlines()
    # The revisions applied, in the order they ran (0004 follows 0006), then where it is.
    order = [
        "0001",
        "0002",
        "0003",
        "0005",
        "0006",
        "0004",
        "0007",
        "0008",
        "0013",
        "0012",
        "0014",
        "0015",
    ]
    assert [line.split()[1].rstrip(":") for line in applied[:-1]] == order, applied
    assert all(line.startswith("applied ") for line in applied[:-1])
    assert applied[-1] == "database schema is at 0015"
    assert "up to date" not in "\n".join(applied)
    assert main(["db", "upgrade", "--config", str(config)]) == 0  # twice is a no-op
    assert capsys.readouterr().out == "database schema is up to date\n"
    import sqlite3

    tables = {
        r[0]
        for r in sqlite3.connect(tmp_path / "g.db").execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'"
        )
    }
    assert {"telemetry", "usage_daily", "eval_results"} <= tables


def test_serve_refuses_to_start_without_keys(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        "providers: [{id: demo, adapter: echo}]\n"
        "models: [{id: m, provider: demo}]\n"
        "configurations: [{id: c, mode: fixed, model: m}]\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "serve", "--config", str(config)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert result.returncode == 1
    assert "allowUnauthenticated" in result.stderr


def test_the_example_config_serves_as_shipped(tmp_path: Path) -> None:
    """A fresh machine: no key, no environment variable, SQLite in the working directory."""
    port = free_port()
    text = (ROOT / "config.example.yaml").read_text().replace("port: 4000", f"port: {port}")
    assert f"port: {port}" in text
    config = tmp_path / "config.example.yaml"
    config.write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GATEWAY_")}
    process = subprocess.Popen(
        [sys.executable, "-m", "gateway.cli", "serve", "--config", str(config)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                if httpx.get(f"{base}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        answer = httpx.post(
            f"{base}/v1/chat/completions",
            json={"model": "chat", "messages": [{"role": "user", "content": "hello"}]},
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["choices"][0]["message"]["content"] == "echo: hello"
        assert answer.headers["x-gateway-cost-usd"]
        routed = httpx.post(
            f"{base}/v1/chat/completions",
            json={"model": "smart-chat", "messages": [{"role": "user", "content": "hi"}]},
        )
        assert routed.status_code == 200 and routed.headers["x-gateway-model"] == "demo-small"
        assert httpx.get(f"{base}/readyz").status_code == 200
        assert (tmp_path / "gateway.db").exists()
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_serve_without_keys_binds_to_loopback_only(tmp_path: Path) -> None:
    port = free_port()
    config = tmp_path / "c.yaml"
    config.write_text(
        f"server: {{host: 0.0.0.0, port: {port}}}\n"
        "auth: {allowUnauthenticated: true}\n"
        f'database: {{url: "sqlite+aiosqlite:///{tmp_path / "g.db"}"}}\n'
        "providers: [{id: demo, adapter: echo}]\n"
        "models: [{id: m, provider: demo}]\n"
        "configurations: [{id: c, mode: fixed, model: m}]\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "gateway.cli", "serve", "--config", str(config)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        for _ in range(300):
            try:
                httpx.get(f"http://127.0.0.1:{port}/healthz")
                break
            except httpx.TransportError:
                time.sleep(0.05)
        listening = subprocess.run(
            ["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=False
        ).stdout
        assert f"127.0.0.1:{port}" in listening
        assert f"0.0.0.0:{port}" not in listening
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=20)
    assert "binding to 127.0.0.1 instead of 0.0.0.0" in output


def _soft_open_files(pid: int) -> int:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    raise AssertionError("no open-file limit")


def test_serve_raises_the_open_file_limit_and_bounds_request_heads(tmp_path: Path) -> None:
    import resource

    from gateway.api.serving import OPEN_FILES_CEILING

    port = free_port()
    config = tmp_path / "c.yaml"
    config.write_text(
        f"server: {{port: {port}, maxHeaderBytes: 2048}}\n"
        "auth: {allowUnauthenticated: true}\n"
        f'database: {{url: "sqlite+aiosqlite:///{tmp_path / "g.db"}"}}\n'
        "providers: [{id: demo, adapter: echo}]\n"
        "models: [{id: m, provider: demo}]\n"
        "configurations: [{id: c, mode: fixed, model: m}]\n"
    )
    serve = [sys.executable, "-m", "gateway.cli", "serve", "--config", str(config)]
    process = subprocess.Popen(  # started with the common soft limit lowered further
        ["sh", "-c", 'ulimit -Sn 256 && exec "$@"', "sh", *serve],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        for _ in range(300):
            try:
                httpx.get(f"http://127.0.0.1:{port}/healthz")
                break
            except httpx.TransportError:
                time.sleep(0.05)
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        expected = OPEN_FILES_CEILING if hard == resource.RLIM_INFINITY else hard
        assert _soft_open_files(process.pid) == min(expected, OPEN_FILES_CEILING) > 256
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nx-big: " + b"b" * 4096)
            assert sock.recv(65536).startswith(b"HTTP/1.1 431 ")
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=20)
    assert re.search(r"open-file limit: \d+ \(hard limit \d+\)", output), output
