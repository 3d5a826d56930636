"""The console's test config and a signed-in HTTP client (cookies as a browser keeps them)."""

from __future__ import annotations

import re

import httpx

from tests.support.gateway import ADMIN_KEY, RunningGateway
from tests.support.routed import routed_yaml

MODELS = """
  - {id: model-a, provider: p-a, name: model-a, capabilities: [chat, tools, streaming],
     contextLength: 128000, price: {input: 2.00, output: 8.00}}
  - {id: model-b, provider: p-b, name: model-b, capabilities: [chat, streaming],
     contextLength: 32000, price: {input: 0.10, output: 0.40}}
  - {id: model-c, provider: p-b, name: model-c, capabilities: [embeddings],
     price: {input: 0.02, output: 0}}
"""
CONFIGURATIONS = """
  - {id: smart, mode: criteria, policyMode: economy, criteria: {capabilities: [chat]},
     fallback: [steady]}
  - {id: steady, mode: fixed, model: model-a}
  - {id: capped, mode: criteria, policyMode: economy, criteria: {capabilities: [chat]},
     budget: {daily: {requests: 1}}}
"""


def console_yaml(upstream_url: str, database_url: str, *, circuit: str | None = None) -> str:
    return routed_yaml(
        upstream_url,
        database_url,
        models=MODELS,
        configurations=CONFIGURATIONS,
        circuit_breaker=circuit or "{failureThreshold: 50, cooldownSeconds: 30}",
    )


def csrf_of(page: str) -> str:
    match = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert match is not None, page[:500]
    return match.group(1)


def signed_in(gateway: RunningGateway, key: str = ADMIN_KEY) -> httpx.Client:
    """A client that signed in through the form, as a browser does."""
    client = httpx.Client(base_url=gateway.url, timeout=10, follow_redirects=False)
    form = client.get("/admin/sign-in")
    assert form.status_code == 200, form.text
    answer = client.post(
        "/admin/sign-in",
        data={"key": key, "csrf": csrf_of(form.text), "next": "/admin/calls"},
        headers={"origin": gateway.url},
    )
    assert answer.status_code == 303, answer.text
    return client


def seed_calls(gateway: RunningGateway, count: int, configurations: tuple[str, ...]) -> None:
    """``count`` rows through the real writer, cycling over ``configurations`` (fixed calls
    of model-a, one in seven failed), oldest first."""
    from datetime import UTC, datetime, timedelta
    from decimal import Decimal

    from gateway.telemetry.records import TelemetryRecord

    start = datetime.now(UTC) - timedelta(hours=1)
    for n in range(count):
        ok = n % 7 != 3
        gateway.runtime.writer.submit(
            TelemetryRecord(
                created_at=start + timedelta(seconds=n),
                request_id=f"seed-{n}",
                operation="chat",
                configuration=configurations[n % len(configurations)],
                api_key_id="alice",
                provider="p-a",
                model="model-a",
                served_provider="p-a" if ok else None,
                served_model="model-a" if ok else None,
                success=ok,
                http_status=200 if ok else 502,
                error_class=None if ok else "upstream_5xx",
                latency_ms=100.0 + n,
                actual_input_tokens=10 if ok else None,
                actual_output_tokens=5 if ok else None,
                actual_cost=Decimal("0.00006") if ok else None,
                usage_source="provider" if ok else "none",
            )
        )
    gateway.flush()
