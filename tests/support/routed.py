"""Helpers for routing tests through the real server: a config with only the test's models,
admin readout calls, and the call-history arithmetic recomputed from telemetry rows.

``gateway_yaml`` always brings its own models, and a criteria-mode decision discovers every
active model, so routing tests build their whole model list here instead.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from decimal import Decimal
from typing import Any

import httpx
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam

from tests.support.gateway import ADMIN_KEY, RunningGateway, running_gateway

MESSAGES: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Say hello."}]
VISION_MESSAGES: list[ChatCompletionMessageParam] = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ],
    }
]
TOOLS: list[ChatCompletionToolParam] = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look something up.",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
    }
]


def routed_yaml(
    upstream_url: str,
    database_url: str,
    *,
    models: str,
    configurations: str,
    routing: str = "{policyMode: balanced}",
    providers: Iterable[str] = ("p-a", "p-b"),
    circuit_breaker: str = "{failureThreshold: 50, cooldownSeconds: 30}",
    extra: str = "",
) -> str:
    """A config whose providers (one per id, all on the fake upstream, no retries) and models
    are exactly the test's, so the decision sees nothing else."""
    provider_lines = "\n".join(
        f'  - {{id: {pid}, adapter: openai, baseUrl: "{upstream_url}/v1", '
        f'apiKey: "sk-upstream-{pid}", timeoutSeconds: 5, maxRetries: 0}}'
        for pid in providers
    )
    return f"""
server: {{requestTimeoutSeconds: 20}}
database: {{url: "{database_url}"}}
auth:
  adminKey: ${{ADMIN_KEY}}
  keys:
    - {{id: alice, key: "${{ALICE_KEY}}"}}
routing: {routing}
circuitBreaker: {circuit_breaker}
providers:
{provider_lines}
models:
{models}
configurations:
{configurations}
{extra}
"""


# Two models on the two default providers (a cheaper per token than b), and a fixed
# configuration for each, which sends it traffic of its own.
TWO_MODELS = """
  - {id: a, provider: p-a, name: model-a, capabilities: [chat, streaming],
     price: {input: 0.15, output: 0.60}}
  - {id: b, provider: p-b, name: model-b, capabilities: [chat, streaming],
     price: {input: 0.30, output: 1.20}}
"""
EACH_ALONE = """
  - {id: only-a, mode: fixed, model: a}
  - {id: only-b, mode: fixed, model: b}
"""

Start = Callable[..., RunningGateway]


@contextmanager
def routed_gateways(upstream_url: str, database_url: str, **defaults: Any) -> Iterator[Start]:
    """``start(**changes)`` serves ``routed_yaml`` with ``defaults`` and the changes on the
    one database; every gateway started is stopped after the block."""
    with ExitStack() as stack:

        def start(**changes: Any) -> RunningGateway:
            text = routed_yaml(upstream_url, database_url, **{**defaults, **changes})
            return stack.enter_context(running_gateway(text))

        yield start


def admin_get(
    gateway: RunningGateway, path: str, key: str | None = ADMIN_KEY, **params: str
) -> httpx.Response:
    headers = {"authorization": f"Bearer {key}"} if key is not None else {}
    return httpx.get(f"{gateway.url}{path}", params=params, headers=headers, timeout=10)


def explain(gateway: RunningGateway, configuration: str, operation: str, **more: str) -> Any:
    response = admin_get(
        gateway,
        "/admin/routing/explain",
        configuration=configuration,
        operation=operation,
        **more,
    )
    assert response.status_code == 200, response.text
    return response.json()


def candidate(readout: dict[str, Any], model: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [c for c in readout["candidates"] if c["model"] == model]
    (only,) = found
    return only


def history_population(
    rows: Iterable[dict[str, Any]], operation: str
) -> dict[str, list[dict[str, Any]]]:
    """The rows the call history counts for one operation, per served model."""
    by_model: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if (
            row["operation"] == operation
            and row["success"] == 1
            and row["fallback_attempts"] == 0
            and row["cache_hit"] == 0
        ):
            by_model.setdefault(row["served_model"], []).append(row)
    return by_model


def mean_latency(rows: list[dict[str, Any]]) -> float:
    return math.fsum(float(r["latency_ms"]) for r in rows) / len(rows)


def mean_ttft(rows: list[dict[str, Any]]) -> float:
    """Streams are ranked by time to first token (docs/routing.md#stream-latency)."""
    return math.fsum(float(r["time_to_first_token_ms"]) for r in rows) / len(rows)


def mean_cost(rows: list[dict[str, Any]]) -> float:
    costs = [Decimal(r["actual_cost"]) for r in rows if r["actual_cost"] is not None]
    return float(sum(costs, Decimal(0)) / len(costs))


def relative(figures: dict[str, float]) -> dict[str, float]:
    """Rule 5 of docs/routing.md#call-history, written out again: g = geometric mean,
    r = x/g clamped to [0.5, 2], score = 1/(1 + r)."""
    g = math.exp(statistics.fmean(math.log(x) for x in figures.values()))
    return {name: 1.0 / (1.0 + min(2.0, max(0.5, x / g))) for name, x in figures.items()}
