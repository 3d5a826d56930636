"""The upstream pool holds ``server.maxUpstreamConnections`` connections (by default as
many as ``server.maxConnections``, so no call waits for one); a call that finds the pool
full waits, and ``/metrics`` counts it."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import RunningGateway, gateway_yaml

MESSAGES: list[Any] = [{"role": "user", "content": "Say hello."}]


def _gateway(upstream: FakeUpstream, sqlite_url: str, server: str) -> RunningGateway:
    yaml = gateway_yaml(upstream.url, sqlite_url).replace(
        "server: {requestTimeoutSeconds: 20}", f"server: {{requestTimeoutSeconds: 20, {server}}}"
    )
    return RunningGateway(yaml)


@pytest.fixture
def small_pool(upstream: FakeUpstream, sqlite_url: str) -> Iterator[RunningGateway]:
    running = _gateway(upstream, sqlite_url, "maxUpstreamConnections: 2")
    yield running
    running.stop()


def _gauge(gateway: RunningGateway, name: str) -> float:
    text = httpx.get(f"{gateway.url}/metrics").text
    found = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
    assert found, f"{name} is not in /metrics"
    return float(found.group(1))


def test_calls_past_the_pool_wait_for_a_connection_and_are_counted(
    small_pool: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("small-model", latency_ms=1500)
    client = small_pool.client()
    assert _gauge(small_pool, "gateway_upstream_pool_connections") == 2
    assert _gauge(small_pool, "gateway_upstream_pool_waits") == 0

    def call(_: int) -> str | None:
        answer = client.chat.completions.create(model="chat", messages=MESSAGES)
        return answer.choices[0].message.content

    with ThreadPoolExecutor(4) as pool:
        answers = pool.map(call, range(4))
        deadline = time.monotonic() + 10
        waiting = 0.0
        while time.monotonic() < deadline:
            waiting = _gauge(small_pool, "gateway_upstream_pool_waiting_calls")
            if waiting == 2:
                break
            time.sleep(0.05)
        assert waiting == 2  # two calls hold the pool's two connections, two wait
        assert list(answers) == ["Hello from the fake upstream."] * 4
    assert _gauge(small_pool, "gateway_upstream_pool_waiting_calls") == 0
    assert _gauge(small_pool, "gateway_upstream_pool_waits") == 2
    rows = small_pool.rows(expect=4)
    assert {row["http_status"] for row in rows} == {200}


def test_the_pool_is_as_large_as_max_connections_by_default(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    running = _gateway(upstream, sqlite_url, "maxConnections: 300")
    try:
        assert _gauge(running, "gateway_upstream_pool_connections") == 300
    finally:
        running.stop()


def test_streams_past_the_pool_wait_for_a_connection_and_all_complete(
    small_pool: RunningGateway, upstream: FakeUpstream
) -> None:
    # Each stream holds its connection for its whole length (five pieces, 300 ms apart).
    upstream.behave("small-model", stream_pieces=["a", "b", "c", "d", "e"], chunk_delay_ms=300)
    client = small_pool.client()

    def stream(_: int) -> tuple[str, int | None]:
        chunks = client.chat.completions.create(
            model="chat",
            messages=MESSAGES,
            stream=True,
            stream_options={"include_usage": True},
        )
        text, tokens = "", None
        for chunk in chunks:
            if chunk.choices and chunk.choices[0].delta.content:
                text += chunk.choices[0].delta.content
            if chunk.usage is not None:
                tokens = chunk.usage.completion_tokens
        return text, tokens

    with ThreadPoolExecutor(4) as pool:
        answers = pool.map(stream, range(4))
        deadline = time.monotonic() + 10
        waiting = 0.0
        while time.monotonic() < deadline:
            waiting = _gauge(small_pool, "gateway_upstream_pool_waiting_calls")
            if waiting > 0:
                break
            time.sleep(0.05)
        assert waiting > 0  # two streams hold the pool's two connections; the others wait
        results = list(answers)
    assert [text for text, _ in results] == ["abcde"] * 4
    assert all(tokens is not None for _, tokens in results)  # usage in the last chunk
    assert _gauge(small_pool, "gateway_upstream_pool_waiting_calls") == 0
    assert _gauge(small_pool, "gateway_upstream_pool_waits") == 2
    rows = small_pool.rows(expect=4)
    assert {row["http_status"] for row in rows} == {200}
