"""A process with ``redis.url`` stops when told, even straight after it started: the
keys-and-teams listener's subscription can be under way then, and redis-py can swallow
the cancellation that lands during ``subscribe`` (gateway/governance/directory.py)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from gateway.api.app import create_app
from gateway.config.loader import load_config_text
from gateway.db.migrate import upgrade

REDIS = os.environ.get("GATEWAY_TEST_REDIS_URL")
pytestmark = pytest.mark.skipif(not REDIS, reason="GATEWAY_TEST_REDIS_URL is not set")
# A hang bound, not a speed target: a stop takes well under 0.5 s; a listener that
# missed its cancellation held it for about 5 s more (until its next read timed out).
STOP_BOUND_SECONDS = 3.0


async def _start_and_stop(app: Any, pause: float) -> None:
    started, stopping = asyncio.Event(), asyncio.Event()
    stopped: list[str] = []

    async def receive() -> dict[str, Any]:
        if not started.is_set():
            return {"type": "lifespan.startup"}
        await stopping.wait()
        return {"type": "lifespan.shutdown"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "lifespan.startup.complete":
            started.set()
        elif message["type"].startswith("lifespan.shutdown"):
            stopped.append(message["type"])

    lifespan = asyncio.create_task(
        app({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send)
    )
    await started.wait()
    await asyncio.sleep(pause)
    stopping.set()
    done, _ = await asyncio.wait({lifespan}, timeout=STOP_BOUND_SECONDS)
    assert lifespan in done, "the process did not stop: a background task missed its stop"
    assert stopped == ["lifespan.shutdown.complete"]
    # Stopped means stopped: no background task of the process is left running.
    left = [t.get_name() for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    assert [name for name in left if name.startswith("governance")] == []


@pytest.mark.parametrize("pause", [0.0, 0.0, 0.002, 0.05, 1.5])
def test_a_process_with_redis_stops_when_told_however_soon_after_it_started(
    tmp_path: Path, pause: float
) -> None:
    config = load_config_text(
        f"""
auth: {{keys: [{{id: a, key: "sk-gw-test-aaaaaaaaaaaaaaaaaaaa"}}]}}
database: {{url: "sqlite+aiosqlite:///{tmp_path / "gateway.db"}"}}
redis: {{url: "{REDIS}"}}
providers: [{{id: p, adapter: custom, baseUrl: "http://127.0.0.1:9/v1"}}]
models: [{{id: m, provider: p, price: {{input: 1, output: 1}}}}]
configurations: [{{id: fixed, mode: fixed, model: m}}]
"""
    )
    upgrade(config.database.url)
    asyncio.run(_start_and_stop(create_app(config), pause))
