"""A SIGTERMed ``gateway serve`` writes every line it logged before it ends (docs/operations.md,
"Stopping and draining a replica"): lines go to stderr through a writer thread, and a
process that died of the signal uvicorn re-raises after its graceful shutdown lost the
last of them (the lifespan's shutdown lines, uvicorn's "Application shutdown complete."
and "Finished server process"). One process and ``server.workers: 2`` (each worker and
the supervisor), both log formats; SIGINT (Ctrl-C) too. Such a stop exits 0."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

import pytest

from tests.support.gateway import ENVIRON
from tests.support.process import free_port, serving


def _config(directory: Path, port: int, server: str) -> Path:
    config = directory / "gateway.yaml"
    config.write_text(
        f"""
server: {{host: 127.0.0.1, port: {port}{server}}}
database: {{url: "sqlite+aiosqlite:///{directory / "gateway.db"}"}}
auth:
  adminKey: ${{ADMIN_KEY}}
  keys: [{{id: alice, key: "${{ALICE_KEY}}"}}]
providers: [{{id: demo, adapter: echo}}]
models: [{{id: small, provider: demo, capabilities: [chat]}}]
configurations: [{{id: chat, mode: fixed, model: small}}]
"""
    )
    return config


def _messages(output: str, json_lines: bool) -> list[str]:
    if not json_lines:
        return output.splitlines()
    return [json.loads(line)["message"] for line in output.splitlines() if line.startswith("{")]


def _stopped(
    tmp_path: Path, server: str, sig: signal.Signals, group: bool = False
) -> tuple[int, list[str]]:
    """Serve, send ``sig`` to the server's process (with ``group``, to its whole process
    group: systemd's default ``KillMode=control-group``, a terminal's Ctrl-C), wait for it:
    its exit status and lines."""
    port = free_port()
    config = _config(tmp_path, port, server)
    with serving(config, port=port, env=ENVIRON, session=group) as served:
        if group:
            os.killpg(served.process.pid, sig)
        else:
            served.process.send_signal(sig)
        returncode = served.process.wait(timeout=60)
        output = served.stop()
    return returncode, _messages(output, "logFormat: json" in server)


def _pids(pattern: str, lines: list[str]) -> list[int]:
    return [int(found.group(1)) for line in lines if (found := re.search(pattern, line))]


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_sigterm_to_one_process_loses_no_line(tmp_path: Path, log_format: str) -> None:
    returncode, lines = _stopped(tmp_path, f", logFormat: {log_format}", signal.SIGTERM)
    text = "\n".join(lines)
    [pid] = _pids(r"Started server process \[(\d+)\]", lines)
    assert any(line.endswith("Application shutdown complete.") for line in lines), text
    assert _pids(r"Finished server process \[(\d+)\]", lines) == [pid], text
    assert returncode == 0, text


def test_sigint_to_one_process_loses_no_line(tmp_path: Path) -> None:
    returncode, lines = _stopped(tmp_path, "", signal.SIGINT)
    text = "\n".join(lines)
    [pid] = _pids(r"Started server process \[(\d+)\]", lines)
    assert _pids(r"Finished server process \[(\d+)\]", lines) == [pid], text
    assert returncode == 0, text


@pytest.mark.parametrize(
    ("sig", "group"),
    [(signal.SIGTERM, False), (signal.SIGTERM, True), (signal.SIGINT, True)],
    ids=["SIGTERM-supervisor", "SIGTERM-group", "SIGINT-group"],
)
def test_a_signal_to_two_workers_loses_no_line(
    tmp_path: Path, sig: signal.Signals, group: bool
) -> None:
    """The supervisor, signalled, sends SIGTERM to each worker (uvicorn's ``terminate``);
    signalled as a group, each worker has its own signal too."""
    returncode, lines = _stopped(tmp_path, ", workers: 2", sig, group)
    text = "\n".join(lines)
    workers = _pids(r"Started server process \[(\d+)\]", lines)
    assert len(workers) == 2, text
    assert sorted(_pids(r"Finished server process \[(\d+)\]", lines)) == sorted(workers), text
    assert sum(line.endswith("Application shutdown complete.") for line in lines) == 2, text
    [supervisor] = _pids(r"Started parent process \[(\d+)\]", lines)
    assert _pids(r"Stopping parent process \[(\d+)\]", lines) == [supervisor], text
    assert returncode == 0, text
