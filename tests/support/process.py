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

CHECKOUT = Path(__file__).resolve().parents[2]


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
    config: Path,
    *args: str,
    host: str = "127.0.0.1",
    port: int,
    env: dict[str, str] | None = None,
    session: bool = False,
) -> Iterator[Served]:
    """``gateway serve --config CONFIG ARGS...``, up once /healthz answers on host:port;
    with ``session``, in a process group of its own (for a signal to the whole group)."""
    with serving_together(
        config, [list(args)], host=host, ports=[port], env=env, session=session
    ) as [served]:
        yield served


@contextmanager
def serving_together(
    config: Path,
    args: list[list[str]],
    *,
    host: str = "127.0.0.1",
    ports: list[int],
    env: dict[str, str] | None = None,
    session: bool = False,
) -> Iterator[list[Served]]:
    """One ``gateway serve --config CONFIG ARGS...`` per port, all started before any is
    waited for (replicas starting at once), up once each answers /healthz."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("GATEWAY_")}
    # The checkout under test, not whichever one an editable install points at: the
    # servers run from the config's folder, where the checkout is not on sys.path.
    environment["PYTHONPATH"] = os.pathsep.join(
        part for part in (str(CHECKOUT), environment.get("PYTHONPATH")) if part
    )
    started: list[Served] = []
    try:
        for arguments, port in zip(args, ports, strict=True):
            command = [sys.executable, "-m", "gateway.cli", "serve", "--config", str(config)]
            process = subprocess.Popen(
                [*command, *arguments],
                cwd=config.parent,
                env={**environment, **(env or {})},
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=session,
            )
            started.append(Served(f"http://{host}:{port}", process))
        for served in started:
            _wait_until_up(served)
        yield started
    except BaseException as error:
        # A failing test shows what the servers logged (a worker that died, a traceback).
        for served in started:
            error.add_note(f"gateway serve ({served.base}) printed:\n" + served.stop())
        raise
    finally:
        for served in started:
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
