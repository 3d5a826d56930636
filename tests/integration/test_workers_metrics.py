"""``server.workers: 2``: /metrics sums both workers' counters, whichever worker answers;
with ``redis.url`` the workers share one read of each signal.

A real ``gateway serve`` with two uvicorn workers on one port; calls on fresh
connections land on both workers (the kernel hands each accepted connection to one of
them), then every scrape, on a fresh connection too, reports the total.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import time
from pathlib import Path

import httpx
import pytest
import redis
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector

from tests.support.gateway import ADMIN_KEY, ENVIRON, TEST_KEY
from tests.support.process import every_worker, free_port, serving

REDIS = os.environ.get("GATEWAY_TEST_REDIS_URL")
CALLS_PER_ROUND = 16


def _config(directory: Path, port: int, redis_url: str | None = None) -> Path:
    config = directory / "gateway.yaml"
    shared = f'redis: {{url: "{redis_url}"}}' if redis_url else ""
    config.write_text(
        f"""
{shared}
server: {{host: 127.0.0.1, port: {port}, workers: 2}}
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


async def _calls(base: str, count: int) -> None:
    # No keep-alive: each call is a new connection, which either worker may accept.
    limits = httpx.Limits(max_keepalive_connections=0)
    headers = {"authorization": f"Bearer {TEST_KEY}"}
    body = {"model": "chat", "messages": [{"role": "user", "content": "hi"}]}
    async with httpx.AsyncClient(limits=limits, headers=headers, timeout=30) as client:
        answers = await asyncio.gather(
            *(client.post(f"{base}/v1/chat/completions", json=body) for _ in range(count))
        )
    assert [a.status_code for a in answers] == [200] * count


def _value(exposition: str, sample: str) -> float:
    found = re.search(rf"^{re.escape(sample)} (\S+)$", exposition, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def _exposition(base: str) -> str:
    with httpx.Client(limits=httpx.Limits(max_keepalive_connections=0)) as client:
        answer = client.get(f"{base}/metrics")
    assert answer.status_code == 200
    return answer.text


def _scrape(base: str) -> float:
    return _value(_exposition(base), 'gateway_requests_total{operation="chat",status="200"}')


def _signal_reads(base: str) -> tuple[float, float]:
    """Quality is read every 60 s: of two workers started together one reads it (under its
    lease) and the other takes that snapshot from Redis; /metrics adds the two up."""
    exposition = _exposition(base)
    read = 'gateway_signal_reads{signal="quality",source="database"}'
    taken = 'gateway_signal_reads{signal="quality",source="shared"}'
    return _value(exposition, read), _value(exposition, taken)


def _clear_shared_state(url: str) -> None:
    client = redis.Redis.from_url(url)
    try:
        keys = list(client.scan_iter(match="gateway:*"))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


def _per_worker(directory: Path, scratch: Path) -> dict[str, float]:
    """Each worker's own count, from its own files in the multiprocess folder."""
    counts: dict[str, float] = {}
    for counter in directory.glob("counter_*.db"):
        pid = counter.stem.removeprefix("counter_")
        alone = scratch / pid
        alone.mkdir(exist_ok=True)
        shutil.copy(counter, alone / counter.name)
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=str(alone))  # type: ignore[no-untyped-call]
        counts[pid] = sum(
            sample.value
            for family in registry.collect()
            for sample in family.samples
            if sample.name == "gateway_requests_total"
        )
    return counts


def _both_served(directory: Path, scratch: Path) -> bool:
    counts = _per_worker(directory, scratch)
    return len(counts) == 2 and all(count > 0 for count in counts.values())


@pytest.mark.parametrize(
    "named_directory", [True, False], ids=["named-folder", "default-folder-and-redis"]
)
def test_two_workers_metrics_add_up_on_every_scrape(tmp_path: Path, named_directory: bool) -> None:
    port = free_port()
    redis_url = None if named_directory else REDIS  # the workers share Redis when it is there
    if redis_url:
        _clear_shared_state(redis_url)
    environ = dict(ENVIRON)
    metrics_dir = tmp_path / "metrics"
    if named_directory:
        metrics_dir.mkdir()
        (metrics_dir / "counter_999999.db").write_bytes(b"stale")  # an earlier run's file
        environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)
    with serving(_config(tmp_path, port, redis_url), port=port, env=environ) as served:
        every_worker(served, ADMIN_KEY, 2)  # both up: each has read (or taken) the signals
        if redis_url:
            # From its first answer on, a worker's startup reads are in its gauge files, so
            # every scrape (either worker answers) counts both workers' reads at once.
            assert [_signal_reads(served.base) for _ in range(8)] == [(1.0, 1.0)] * 8
        sent = 0
        # Rounds until both workers have served calls: on a busy machine one worker can
        # take every connection for a while (or still be starting), so the bound is time.
        deadline = time.monotonic() + 120
        while True:
            asyncio.run(_calls(served.base, CALLS_PER_ROUND))
            sent += CALLS_PER_ROUND
            both_served = not named_directory or _both_served(metrics_dir, tmp_path)
            if (both_served and sent >= 3 * CALLS_PER_ROUND) or time.monotonic() > deadline:
                break
        scrapes = [_scrape(served.base) for _ in range(8)]
        if redis_url:
            assert _signal_reads(served.base) == (1.0, 1.0)  # no second read since
        if named_directory:
            assert not (metrics_dir / "counter_999999.db").exists()  # emptied at start
            per_worker = _per_worker(metrics_dir, tmp_path)
            assert len(per_worker) == 2, per_worker  # both workers served calls...
            assert all(count > 0 for count in per_worker.values())
            assert sum(per_worker.values()) == sent  # ...and only these calls count
    assert scrapes == [float(sent)] * len(scrapes)
