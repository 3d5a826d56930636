"""Helpers for the budget and cache tests: configs with budgets, bursts, scratch databases."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from openai.types.chat import ChatCompletionMessageParam
from sqlalchemy import event, func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.budget_tables import budget_counters, budget_reservations
from tests.support.gateway import TEST_KEY, RunningGateway, running_gateway
from tests.unit.db.scratch import scratch_database

MESSAGES: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Say hello."}]
POSTGRES = os.environ.get("GATEWAY_TEST_POSTGRES_URL")
MARIADB = os.environ.get("GATEWAY_TEST_MARIADB_URL")
HTTP_BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param(
        "postgresql",
        id="postgresql",
        marks=pytest.mark.skipif(not POSTGRES, reason="GATEWAY_TEST_POSTGRES_URL is not set"),
    ),
    # Refused admissions once deadlocked on InnoDB (503 instead of 429): pinned here.
    pytest.param(
        "mariadb",
        id="mariadb",
        marks=pytest.mark.skipif(not MARIADB, reason="GATEWAY_TEST_MARIADB_URL is not set"),
    ),
]


def budget_yaml(
    upstream_url: str,
    database_url: str,
    *,
    alice: str = "",
    configurations: str = "",
    keys: str = "",
    cache: str = "{store: database}",
    timeout_seconds: int = 20,
    server: str = "",
    models: str = "",
    extra: str = "",
) -> str:
    """One fake provider, model ``small`` (0.15/0.60 per 1M), configuration ``chat``;
    ``alice`` adds fields to alice's key entry (``budget: {...}``), ``extra`` top-level
    sections."""
    alice_extra = f", {alice}" if alice else ""
    return f"""
server: {{requestTimeoutSeconds: {timeout_seconds}{server}}}
database: {{url: "{database_url}"}}
cache: {cache}
auth:
  adminKey: ${{ADMIN_KEY}}
  keys:
    - {{id: alice, key: "${{ALICE_KEY}}"{alice_extra}}}
    - {{id: bob, key: "${{BOB_KEY}}", configurations: [chat]}}
{keys}
circuitBreaker: {{failureThreshold: 1000, cooldownSeconds: 30}}
providers:
  - {{id: fake, adapter: openai, baseUrl: "{upstream_url}/v1", apiKey: "sk-upstream-secret-42",
     timeoutSeconds: 5, maxRetries: 0}}
models:
  - {{id: small, provider: fake, name: small-model, capabilities: [chat, streaming],
     contextLength: 128000, maxOutputTokens: 4096, price: {{input: 0.15, output: 0.60}}}}
  - {{id: embedder, provider: fake, name: embed-model, capabilities: [embeddings],
     price: {{input: 0.02, output: 0}}}}
{models}
configurations:
  - {{id: chat, mode: fixed, model: small}}
  - {{id: embed, mode: fixed, model: embedder}}
{configurations}
{extra}
"""


@contextmanager
def database(backend: str, directory: Path) -> Iterator[str]:
    """A fresh database of ``backend`` at the schema's head, dropped afterwards."""
    with scratch_database(backend, directory, migrated=True) as url:
        yield url


running = running_gateway  # a gateway for the block, stopped after it


def query(gateway: RunningGateway, statement: Any) -> list[dict[str, Any]]:
    """Rows of ``statement`` read through the running gateway's own engine."""

    async def read() -> list[dict[str, Any]]:
        async with gateway.runtime.engine.connect() as connection:
            result = await connection.execute(statement)
            return [dict(row) for row in result.mappings().all()]

    return gateway.server.run(read())


def counter(
    gateway: RunningGateway, scope: str, scope_id: str, period: str = "day"
) -> dict[str, Any] | None:
    """The budget counter row of ``scope``/``scope_id`` in the current window, if any."""
    t = budget_counters.c
    rows = query(
        gateway,
        select(t.requests, t.tokens, t.cost).where(
            t.scope == scope, t.scope_id == scope_id, t.period == period
        ),
    )
    return rows[0] if rows else None


def holds(gateway: RunningGateway) -> int:
    """Rows in ``budget_reservations`` (one per budget line of each hold)."""
    statement = select(func.count().label("n")).select_from(budget_reservations)
    return int(query(gateway, statement)[0]["n"])


@contextmanager
def refused_connections(engine: AsyncEngine) -> Iterator[None]:
    """Every new connection of ``engine`` is refused, as by a database that is down (empty
    the pool too, for the connections it keeps)."""

    def refuse(*_: Any) -> Any:
        raise ConnectionRefusedError(111, "Connect call failed (simulated outage)")

    event.listen(engine.sync_engine, "do_connect", refuse)
    try:
        yield
    finally:
        event.remove(engine.sync_engine, "do_connect", refuse)


@contextmanager
def outage(gateway: RunningGateway) -> Iterator[None]:
    """The gateway's database becomes unreachable, then comes back."""
    with refused_connections(gateway.runtime.engine):
        gateway.server.run(gateway.runtime.engine.dispose())
        yield


def chat_body(configuration: str = "chat", **extra: Any) -> dict[str, Any]:
    return {"model": configuration, "messages": MESSAGES, **extra}


async def _burst(urls: list[str], bodies: list[dict[str, Any]], key: str) -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=len(bodies) + 8, max_keepalive_connections=0)
    headers = {"authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(limits=limits, timeout=60.0, headers=headers) as client:
        calls = [
            client.post(f"{urls[i % len(urls)]}/v1/chat/completions", json=body)
            for i, body in enumerate(bodies)
        ]
        return list(await asyncio.gather(*calls))


def burst(
    urls: list[str], bodies: list[dict[str, Any]], key: str = TEST_KEY
) -> list[httpx.Response]:
    """Send every body at once, spread over ``urls`` round-robin; the answers in order."""
    return asyncio.run(_burst(urls, bodies, key))


def statuses(responses: list[httpx.Response]) -> dict[int, int]:
    counted: dict[int, int] = {}
    for response in responses:
        counted[response.status_code] = counted.get(response.status_code, 0) + 1
    return counted
