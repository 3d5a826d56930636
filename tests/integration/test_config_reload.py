"""Hot reload through a real `gateway serve` process: edit the file and send SIGHUP, or just
edit it, and the new configuration is served; an invalid file keeps the old one and every
problem is logged with its YAML path; /admin/config/version says which is served; with
several workers, each one reloads."""

from __future__ import annotations

import hashlib
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import openai

from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import ADMIN_KEY, ENVIRON, TEST_KEY, gateway_yaml
from tests.support.process import Served, admin_version, every_worker, free_port, serving

LARGE = """
  - {id: large, provider: fake, name: large-model, capabilities: [chat],
     price: {input: 3.00, output: 15.00}}
"""
ROUTED = """
  - {id: routed, mode: criteria, criteria: {capabilities: [chat]}}
"""


def _yaml(
    upstream: FakeUpstream, database: Path, *, chat_model: str, history: bool, workers: int = 1
) -> str:
    text = gateway_yaml(
        upstream.url,
        f"sqlite+aiosqlite:///{database}",
        models=LARGE,
        configurations=ROUTED,
        routing=f"{{policyMode: balanced, callHistory: {str(history).lower()}}}",
    )
    text = text.replace(
        "server: {requestTimeoutSeconds: 20}",
        f"server: {{requestTimeoutSeconds: 20, workers: {workers}}}",
    )
    return text.replace(
        "{id: chat, mode: fixed, model: small}", f"{{id: chat, mode: fixed, model: {chat_model}}}"
    )


def _version(served: Served) -> dict[str, Any]:
    return admin_version(served, ADMIN_KEY)


def _wait_for(check: Callable[[], bool], seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError("timed out")


def _served_model(served: Served) -> str:
    client = openai.OpenAI(base_url=f"{served.base}/v1", api_key=TEST_KEY, max_retries=0)
    raw = client.chat.completions.with_raw_response.create(
        model="chat", messages=[{"role": "user", "content": "Hi"}]
    )
    return raw.headers["x-gateway-model"]


def _digest(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def test_sighup_and_edits_reload_and_an_invalid_file_changes_nothing(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    config = tmp_path / "gateway.yaml"
    database = tmp_path / "gateway.db"
    config.write_text(_yaml(upstream, database, chat_model="small", history=False))
    admin = {"authorization": f"Bearer {ADMIN_KEY}"}
    with serving(config, "--port", str(port := free_port()), port=port, env=ENVIRON) as served:
        first = _version(served)
        assert first["hash"] == _digest(config) and first["generation"] == 1
        assert _served_model(served) == "small"
        assert httpx.get(f"{served.base}/admin/config/version", timeout=10).status_code == 401

        # 1. Edit, then SIGHUP: the new file is served, callHistory included.
        config.write_text(_yaml(upstream, database, chat_model="large", history=True))
        served.process.send_signal(signal.SIGHUP)
        _wait_for(lambda: _version(served)["generation"] == 2)
        second = _version(served)
        assert second["hash"] == _digest(config) and second["loadedAt"] > first["loadedAt"]
        assert _served_model(served) == "large"
        readout = httpx.get(
            f"{served.base}/admin/routing/explain",
            params={"configuration": "routed", "operation": "chat"},
            headers=admin,
            timeout=10,
        ).json()
        assert readout["callHistory"] is True

        # 2. An invalid file: nothing changes, whether signalled or seen on disk.
        config.write_text(
            _yaml(upstream, database, chat_model="ghost", history=True).replace(
                "routing: {", "routing: {surprise: 1, "
            )
        )
        served.process.send_signal(signal.SIGHUP)
        time.sleep(3)  # time to take it (or, here, to refuse it) several times over
        assert _version(served) == second
        assert _served_model(served) == "large"

        # 3. A valid edit without a signal: the watcher takes it.
        config.write_text(_yaml(upstream, database, chat_model="small", history=False))
        _wait_for(lambda: _version(served)["generation"] == 3)
        assert _version(served)["hash"] == _digest(config)
        assert _served_model(served) == "small"
        log = served.stop()
    assert "configurations[0].model: " in log, log
    assert "routing.surprise: " in log, log
    assert "the running configuration (" + second["hash"] + ") stays" in log
    assert "sk-upstream-secret-42" not in log and TEST_KEY not in log


def test_with_several_workers_each_worker_reloads(upstream: FakeUpstream, tmp_path: Path) -> None:
    config = tmp_path / "gateway.yaml"
    database = tmp_path / "gateway.db"
    config.write_text(_yaml(upstream, database, chat_model="small", history=False, workers=2))
    with serving(config, "--port", str(port := free_port()), port=port, env=ENVIRON) as served:
        # Both workers up first: a worker that starts after the edit serves it at generation 1.
        started = every_worker(served, ADMIN_KEY, 2)
        assert all(v["generation"] == 1 for v in started.values())
        config.write_text(_yaml(upstream, database, chat_model="large", history=False, workers=2))
        served.process.send_signal(signal.SIGHUP)  # to the supervisor: passed to each worker
        digest = _digest(config)
        seen: dict[int, dict[str, Any]] = {}

        def every_worker_reloaded() -> bool:
            version = _version(served)
            seen[version["pid"]] = version
            return set(seen) == set(started) and all(v["hash"] == digest for v in seen.values())

        _wait_for(every_worker_reloaded, seconds=120)  # generous: a loaded machine
        # The same processes, each reloaded in place (not replaced by new workers).
        assert all(v["generation"] == 2 for v in seen.values()), seen
        assert served.process.poll() is None
        assert _served_model(served) == "large"
