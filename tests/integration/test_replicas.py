"""Three replicas from one YAML on one PostgreSQL and one Redis (docs/operations.md,
"Replicas"): budgets exact across them, a circuit opened in one refuses the provider in
the others, signal readings read once for all, the response cache shared, and Redis
going away (a forwarder in front of it is switched off) means per-process circuits,
logged once, shared again when it returns.

Real ``gateway serve`` processes (``--port`` each, the same file), a fake upstream.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import redis

from gateway.db.migrate import upgrade
from tests.integration.budget_support import burst, chat_body, database, statuses
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import ENVIRON, OTHER_KEY, TEST_KEY
from tests.support.process import free_port
from tests.support.tcp_proxy import TcpProxy

POSTGRES = os.environ.get("GATEWAY_TEST_POSTGRES_URL")
REDIS = os.environ.get("GATEWAY_TEST_REDIS_URL")
pytestmark = [
    pytest.mark.skipif(not POSTGRES, reason="GATEWAY_TEST_POSTGRES_URL is not set"),
    pytest.mark.skipif(not REDIS, reason="GATEWAY_TEST_REDIS_URL is not set"),
]
REPLICAS = 3
SERVE = [sys.executable, "-m", "gateway.cli", "serve"]


def _yaml(upstream: str, database_url: str, redis_url: str) -> str:
    provider = f'adapter: openai, baseUrl: "{upstream}/v1", timeoutSeconds: 5, maxRetries: 0'
    return f"""
server: {{host: 127.0.0.1, requestTimeoutSeconds: 20}}
database: {{url: "{database_url}"}}
redis: {{url: "{redis_url}"}}
cache: {{store: redis}}
auth:
  adminKey: ${{ADMIN_KEY}}
  keys:
    - {{id: alice, key: "${{ALICE_KEY}}", budget: {{daily: {{requests: 50}}}}}}
    - {{id: bob, key: "${{BOB_KEY}}"}}
routing: {{callHistory: true, callHistoryCacheSeconds: 600}}
health: {{cacheSeconds: 1}}
circuitBreaker: {{failureThreshold: 3, cooldownSeconds: 60}}
providers:
  - {{id: fake, {provider}}}
  - {{id: flaky, {provider}}}
  - {{id: flaky2, {provider}}}
models:
  - {{id: small, provider: fake, name: small-model, capabilities: [chat]}}
  - {{id: cachedm, provider: fake, name: cached-model, capabilities: [chat]}}
  - {{id: unsteady, provider: flaky, name: flaky-model, capabilities: [chat]}}
  - {{id: unsteady2, provider: flaky2, name: flaky2-model, capabilities: [chat]}}
configurations:
  - {{id: chat, mode: fixed, model: small}}
  - {{id: cached, mode: fixed, model: cachedm, cache: {{ttlSeconds: 300}}}}
  - {{id: flaky, mode: fixed, model: unsteady}}
  - {{id: flaky2, mode: fixed, model: unsteady2}}
"""


@dataclass
class Replica:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def metric(self, name: str, **labels: str) -> float:
        text = httpx.get(f"{self.url}/metrics", timeout=10).text
        wanted = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
        for line in text.splitlines():
            found = re.fullmatch(rf"{name}(?:\{{(.*)\}})? (\S+)", line)
            if found and ",".join(sorted((found.group(1) or "").split(","))) == wanted:
                return float(found.group(2))
        return 0.0

    def call(self, configuration: str, key: str = OTHER_KEY) -> httpx.Response:
        return httpx.post(
            f"{self.url}/v1/chat/completions",
            json=chat_body(configuration),
            headers={"authorization": f"Bearer {key}"},
            timeout=30,
        )


@contextmanager
def _replicas(config: Path, directory: Path) -> Iterator[list[Replica]]:
    """``gateway serve --config CONFIG --port P`` three times, started together."""
    environ = {**os.environ, **ENVIRON}
    replicas: list[Replica] = []
    try:
        for index in range(REPLICAS):
            port = free_port()
            log = directory / f"replica{index}.log"
            with log.open("wb") as output:
                process = subprocess.Popen(
                    [*SERVE, "--config", str(config), "--port", str(port)],
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    env=environ,
                )
            replicas.append(Replica(f"http://127.0.0.1:{port}", process, log))
        for replica in replicas:
            _wait_ready(replica)
        yield replicas
    finally:
        for replica in replicas:
            replica.process.terminate()
        for replica in replicas:
            try:
                replica.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                replica.process.kill()
                replica.process.wait()


def _wait_ready(replica: Replica) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if replica.process.poll() is not None:
            raise AssertionError(f"replica exited:\n{replica.output()[-3000:]}")
        try:
            if httpx.get(f"{replica.url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"replica did not start:\n{replica.output()[-3000:]}")


def _wait_for_line(
    replicas: list[Replica], text: str, since: list[int] | None = None, seconds: float = 15
) -> None:
    """Until every replica has logged ``text`` (after offset ``since[i]`` of its log)."""
    offsets = since or [0] * len(replicas)

    def missing() -> list[str]:
        return [
            r.url for r, at in zip(replicas, offsets, strict=True) if text not in r.output()[at:]
        ]

    deadline = time.monotonic() + seconds
    while missing() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not missing(), f"no line {text!r} from {missing()}"


def _tails(replicas: list[Replica]) -> str:
    """The end of every replica's log, for a failed assertion's message."""
    return "\n".join(f"--- {r.url}\n{r.output()[-2500:]}" for r in replicas)


def _clear(url: str) -> None:
    client = redis.Redis.from_url(url)
    try:
        keys = list(client.scan_iter(match="gateway:*"))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


def test_three_replicas_on_postgresql_and_redis_share_budgets_circuits_signals_and_cache(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    assert REDIS is not None
    upstream.behave("small-model", latency_ms=300)  # the burst's calls overlap
    upstream.behave("flaky-model", fail_always=500)
    upstream.behave("flaky2-model", fail_always=500)
    _clear(REDIS)
    with ExitStack() as stack:
        stack.callback(_clear, REDIS)
        url = stack.enter_context(database("postgresql", tmp_path))
        upgrade(url)  # once, as `gateway db upgrade` before starting replicas
        forwarder, redis_url = TcpProxy.for_url(REDIS)
        stack.callback(forwarder.close)
        config = tmp_path / "gateway.yaml"  # one file for every replica
        config.write_text(_yaml(upstream.url, url, redis_url))
        replicas = stack.enter_context(_replicas(config, tmp_path))
        first, second, third = replicas

        # Signal readings: quality (60 s) and history (600 s) were read once, at start, by
        # one replica (it held the lease); the others took its reading.
        for signal in ("quality", "history"):
            read = [
                r.metric("gateway_signal_reads", signal=signal, source="database") for r in replicas
            ]
            taken = [
                r.metric("gateway_signal_reads", signal=signal, source="shared") for r in replicas
            ]
            assert (sum(read), sum(taken)) == (1, REPLICAS - 1), (
                signal,
                read,
                taken,
                _tails(replicas),
            )

        # Budgets: 120 simultaneous calls over 3 replicas, a 50-request budget: exactly 50.
        answers = burst([r.url for r in replicas], [chat_body()] * 120, key=TEST_KEY)
        assert statuses(answers) == {200: 50, 429: 70}, _tails(replicas)
        assert upstream.calls["small-model"] == 50
        served = {r.url: 0 for r in replicas}
        for index, answer in enumerate(answers):
            served[replicas[index % REPLICAS].url] += answer.status_code == 200
        # Exactly 50 over the replicas is the shared counter; which replica's calls reach it
        # first is the machine's scheduling (under load one replica's may all come last and
        # find the budget spent), so what is asked is that more than one replica served.
        assert sum(1 for count in served.values() if count > 0) >= 2, served

        # Health (cacheSeconds 1), after seconds of running: most readings were shared ones.
        read = sum(
            r.metric("gateway_signal_reads", signal="health", source="database") for r in replicas
        )
        taken = [
            r.metric("gateway_signal_reads", signal="health", source="shared") for r in replicas
        ]
        shared_by = sum(1 for t in taken if t > 0)
        assert read <= sum(taken) and shared_by >= REPLICAS - 1, (read, taken, _tails(replicas))

        # The response cache: stored through one replica, a hit on the others.
        assert first.call("cached").status_code == 200
        for replica in (second, third):
            answer = replica.call("cached")
            assert answer.status_code == 200 and answer.headers["x-gateway-cache"] == "hit"
        assert upstream.calls["cached-model"] == 1

        # A circuit opened by the first replica's failures refuses the provider in the
        # others within a second: they send it nothing.
        assert [first.call("flaky").status_code for _ in range(3)] == [502] * 3
        assert upstream.calls["flaky-model"] == 3
        time.sleep(1.0)
        for replica in (second, third):
            refused = replica.call("flaky")
            assert refused.status_code == 503, (refused.text, _tails(replicas))
        assert upstream.calls["flaky-model"] == 3
        _wait_for_line([second, third], "circuit opened for provider flaky by another gateway")

        # Redis goes away: per-process circuits (logged once), shared again when it returns.
        before = [len(replica.output()) for replica in replicas]
        forwarder.down()
        _wait_for_line(replicas, "circuit states: Redis does not answer", before)
        assert [first.call("flaky2").status_code for _ in range(3)] == [502] * 3
        assert first.call("flaky2").status_code == 503, _tails(replicas)  # open in the first
        assert second.call("flaky2").status_code == 502, _tails(replicas)  # not in the second
        assert upstream.calls["flaky2-model"] == 4
        time.sleep(1.5)  # several polls while down: still one line each
        forwarder.up()
        _wait_for_line(replicas, "circuit states: Redis answers again", before)
        time.sleep(1.0)
        # The first's opening, written now:
        assert third.call("flaky2").status_code == 503, _tails(replicas)
        assert upstream.calls["flaky2-model"] == 4
        for replica, start in zip(replicas, before, strict=True):
            during = replica.output()[start:]
            assert during.count("circuit states: Redis does not answer") == 1, during
            assert during.count("circuit states: Redis answers again") == 1, during
