"""The rolling-upgrade order of docs/operations.md ("Rolling upgrades"): `gateway db
upgrade` runs while a replica is serving on the same database, then a second replica
starts on it, and both serve calls side by side."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx

from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import ENVIRON, TEST_KEY, gateway_yaml
from tests.support.process import CHECKOUT, free_port, serving

CHAT = {"model": "chat", "messages": [{"role": "user", "content": "Hi"}]}


def _chat(base: str) -> int:
    answer = httpx.post(
        f"{base}/v1/chat/completions",
        headers={"authorization": f"Bearer {TEST_KEY}"},
        json=CHAT,
        timeout=30,
    )
    return answer.status_code


def test_migrate_then_restart_one_by_one_keeps_serving(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(gateway_yaml(upstream.url, f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}"))
    first, second = free_port(), free_port()
    with serving(config, "--port", str(first), port=first, env=ENVIRON) as old:
        assert _chat(old.base) == 200
        upgraded = subprocess.run(
            [sys.executable, "-m", "gateway.cli", "db", "upgrade", "--config", str(config)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(CHECKOUT), **ENVIRON},
        )
        assert upgraded.returncode == 0, upgraded.stderr
        assert _chat(old.base) == 200  # the running replica is not disturbed
        with serving(config, "--port", str(second), port=second, env=ENVIRON) as new:
            assert _chat(new.base) == 200
            assert _chat(old.base) == 200  # side by side on one database
    assert upstream.calls["small-model"] == 4
