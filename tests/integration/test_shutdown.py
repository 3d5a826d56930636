"""Stopping a replica (docs/operations.md, "Stopping and draining a replica"): on SIGTERM
`/readyz` answers 503 first while calls are still served
(`server.shutdownDrainSeconds`), then the listener closes and running calls get
`server.shutdownGraceSeconds` to end; `/readyz` reports Redis when `redis.url` is set."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import ENVIRON, TEST_KEY, gateway_yaml, running_gateway
from tests.support.process import Served, free_port, serving

CHAT = {"model": "slow-chat", "messages": [{"role": "user", "content": "Hi"}]}
# A provider that waits for its slow model (the common one times out after 5 s).
PATIENT = """  - {id: patient, adapter: openai, baseUrl: "%s/v1", timeoutSeconds: 60, maxRetries: 0}
"""
SLOW_MODEL = "  - {id: slow, provider: patient, name: slow-model, capabilities: [chat]}\n"
SLOW_CHAT = "  - {id: slow-chat, mode: fixed, model: slow}\n"


def _config(tmp_path: Path, upstream: FakeUpstream, server: str, extra: str = "") -> Path:
    database = f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}"
    yaml = gateway_yaml(
        upstream.url,
        database,
        providers=PATIENT % upstream.url,
        models=SLOW_MODEL,
        configurations=SLOW_CHAT,
        extra=extra,
    ).replace(
        "server: {requestTimeoutSeconds: 20}", f"server: {{requestTimeoutSeconds: 60, {server}}}"
    )
    config = tmp_path / "config.yaml"
    config.write_text(yaml)
    return config


@contextmanager
def _serving(config: Path) -> Iterator[Served]:
    port = free_port()
    with serving(config, "--port", str(port), port=port, env=ENVIRON) as served:
        yield served


def _call_in_background(pool: ThreadPoolExecutor, served: Served) -> Future[httpx.Response]:
    return pool.submit(
        httpx.post,
        f"{served.base}/v1/chat/completions",
        headers={"authorization": f"Bearer {TEST_KEY}"},
        json=CHAT,
        timeout=60,
    )


def _wait_until_upstream_has(upstream: FakeUpstream, calls: int) -> None:
    deadline = time.monotonic() + 30
    while upstream.calls["slow-model"] < calls:
        assert time.monotonic() < deadline, "the call never reached the upstream"
        time.sleep(0.02)


def _exit_of(served: Served, within: float) -> int:
    returncode = served.process.wait(timeout=within)
    return returncode


def test_sigterm_takes_the_replica_out_of_rotation_while_a_running_call_completes(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    upstream.behave("slow-model", latency_ms=8000)  # longer than the drain
    config = _config(tmp_path, upstream, "shutdownDrainSeconds: 2, shutdownGraceSeconds: 30")
    with _serving(config) as served, ThreadPoolExecutor(2) as pool:
        assert httpx.get(f"{served.base}/readyz", timeout=5).status_code == 200
        running = _call_in_background(pool, served)
        _wait_until_upstream_has(upstream, 1)

        served.process.send_signal(signal.SIGTERM)
        ready = httpx.get(f"{served.base}/readyz", timeout=5)
        assert ready.status_code == 503, ready.text
        assert ready.json() == {"status": "draining"}
        assert not running.done()  # still running while readiness fails

        # Once the drain is over the listener closes; the running call still ends well.
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{served.base}/healthz", timeout=1)
            except httpx.ConnectError:
                break
            assert time.monotonic() < deadline, "the listener never closed"
            time.sleep(0.1)
        assert not running.done()  # the listener closed before the call ended
        answer = running.result(timeout=60)
        assert answer.status_code == 200, answer.text
        assert answer.json()["choices"][0]["message"]["content"] == "Hello from the fake upstream."
        _exit_of(served, within=60)
        output = served.stop()
    assert "SIGTERM: draining for 2 s" in output


def test_calls_still_running_after_the_grace_period_are_cut(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    upstream.behave("slow-model", latency_ms=20_000)
    config = _config(tmp_path, upstream, "shutdownGraceSeconds: 1")
    with _serving(config) as served, ThreadPoolExecutor(1) as pool:
        running = _call_in_background(pool, served)
        _wait_until_upstream_has(upstream, 1)
        started = time.monotonic()
        served.process.send_signal(signal.SIGTERM)
        _exit_of(served, within=15)  # not the 20 s the call would take
        stopped_after = time.monotonic() - started
        with pytest.raises(httpx.HTTPError):  # 500 from uvicorn, or a closed connection
            running.result(timeout=30).raise_for_status()
        served.stop()
    assert stopped_after < 15


def test_without_a_drain_sigterm_closes_the_listener_at_once(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    """The default (shutdownDrainSeconds: 0): no 503 phase; the running call still ends."""
    upstream.behave("slow-model", latency_ms=3000)
    config = _config(tmp_path, upstream, "shutdownGraceSeconds: 30")
    with _serving(config) as served, ThreadPoolExecutor(1) as pool:
        running = _call_in_background(pool, served)
        _wait_until_upstream_has(upstream, 1)
        served.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{served.base}/readyz", timeout=1)
            except httpx.ConnectError:
                break
            assert time.monotonic() < deadline, "the listener never closed"
            time.sleep(0.05)
        assert running.result(timeout=60).status_code == 200
        _exit_of(served, within=60)


def test_readyz_names_redis_when_redis_is_down(upstream: FakeUpstream, tmp_path: Path) -> None:
    closed = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    database = f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}"
    yaml = gateway_yaml(upstream.url, database, extra=f'redis: {{url: "{closed}"}}')
    with running_gateway(yaml) as gateway:
        ready = httpx.get(f"{gateway.url}/readyz", timeout=10)
        assert ready.status_code == 503
        assert ready.json() == {"status": "unavailable", "down": ["redis"]}
        # Calls are still served: without Redis each process keeps its own state.
        answer = gateway.client().chat.completions.create(
            model="chat", messages=[{"role": "user", "content": "Hi"}]
        )
        assert answer.choices[0].message.content == "Hello from the fake upstream."


def test_readyz_is_ready_with_a_reachable_redis(upstream: FakeUpstream, tmp_path: Path) -> None:
    url = os.environ.get("GATEWAY_TEST_REDIS_URL")
    if not url:
        pytest.skip("GATEWAY_TEST_REDIS_URL is not set")
    database = f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}"
    yaml = gateway_yaml(upstream.url, database, extra=f'redis: {{url: "{url}"}}')
    with running_gateway(yaml) as gateway:
        ready = httpx.get(f"{gateway.url}/readyz", timeout=10)
        assert ready.status_code == 200, ready.text
        assert ready.json() == {"status": "ready"}
