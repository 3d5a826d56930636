"""`gateway serve` as a real process on loopback, its output kept for the test to read."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

# The checkout these tests belong to: the server imports its `gateway`, not whichever one
# the virtualenv installed (the process runs in the config's folder, not here).
_ROOT = str(Path(__file__).resolve().parents[2])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Served:
    base: str
    process: subprocess.Popen[str]
    output: list[str] = field(default_factory=list)

    def stop(self) -> str:
        """Terminate the server; everything it printed (stdout and stderr)."""
        if not self.output:
            if self.process.poll() is None:
                self.process.terminate()
            out, _ = self.process.communicate(timeout=30)
            self.output.append(out)
        return self.output[0]


@contextmanager
def serving(
    config: Path, *args: str, host: str = "127.0.0.1", port: int, env: dict[str, str] | None = None
) -> Iterator[Served]:
    """``gateway serve --config CONFIG ARGS...``, up once /healthz answers on host:port."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("GATEWAY_")}
    path = os.pathsep.join(p for p in (_ROOT, environment.get("PYTHONPATH")) if p)
    environment["PYTHONPATH"] = path
    process = subprocess.Popen(
        [sys.executable, "-m", "gateway.cli", "serve", "--config", str(config), *args],
        cwd=config.parent,
        env={**environment, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    served = Served(f"http://{host}:{port}", process)
    try:
        _wait_until_up(served)
        yield served
    except BaseException as error:
        # A failing test shows what the server logged (a worker that died, a traceback).
        error.add_note("gateway serve printed:\n" + served.stop())
        raise
    finally:
        served.stop()


def _wait_until_up(served: Served) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if served.process.poll() is not None:
            raise AssertionError("gateway serve exited:\n" + served.stop())
        try:
            if httpx.get(f"{served.base}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.05)
    raise AssertionError("gateway serve did not answer /healthz:\n" + served.stop())


def admin_version(served: Served, admin_key: str) -> dict[str, Any]:
    """GET /admin/config/version on a new connection (any worker may answer): the
    configuration it serves, its generation and the answering worker's pid."""
    headers = {"authorization": f"Bearer {admin_key}", "connection": "close"}
    response = httpx.get(f"{served.base}/admin/config/version", headers=headers, timeout=10)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def every_worker(served: Served, admin_key: str, workers: int) -> dict[int, dict[str, Any]]:
    """Ask until ``workers`` different worker processes have answered (up to 120 s: /healthz
    answers once one worker is up, and on a busy machine the next can take many seconds);
    what each answered, by pid."""
    answered: dict[int, dict[str, Any]] = {}
    deadline = time.monotonic() + 120
    while len(answered) < workers:
        if time.monotonic() > deadline:
            raise AssertionError(f"only these workers answered: {sorted(answered)}")
        version = admin_version(served, admin_key)
        answered.setdefault(version["pid"], version)
        time.sleep(0.02)
    return answered
