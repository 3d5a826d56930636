"""The console's data: each view's dict, also answered as JSON by ``/admin/api/*``.

Query parameters are parsed here (pure helpers); reading goes through the telemetry,
budget and runtime modules.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from gateway.api.console.params import call_id, moment, text
from gateway.budgets.overview import budget_overview
from gateway.circuits.view import CircuitView, circuit_views
from gateway.domain.errors import InvalidRequest
from gateway.domain.failures import ErrorClass
from gateway.domain.model import Operation, PolicyMode
from gateway.runtime import Runtime
from gateway.telemetry.console import (
    FIXED_MODE,
    CallFilters,
    iso,
    list_calls,
    provider_figures,
)
from gateway.telemetry.overview import overview_figures

# Every class a row can hold (a filter's choices), in the order the error tree lists them.
ERROR_CLASSES: tuple[str, ...] = tuple(str(member) for member in ErrorClass)
PAGE_SIZE = 50
FILTER_NAMES = (
    "configuration",
    "key",
    "model",
    "provider",
    "status",
    "error",
    "mode",
    "operation",
    "since",
    "until",
)


def filter_options(runtime: Runtime) -> dict[str, list[str]]:
    config = runtime.config
    return {
        "configurations": sorted(config.configurations),
        "keys": sorted(k.id for k in runtime.directory.all_keys()),
        "models": sorted(m.id for m in config.models),
        "providers": sorted(config.providers),
        "errorClasses": list(ERROR_CLASSES),
        "modes": [FIXED_MODE, *(m.value for m in PolicyMode)],
        "policyModes": [m.value for m in PolicyMode],
        "operations": [o.value for o in Operation],
    }


def _one_of(value: str | None, allowed: list[str], name: str) -> str | None:
    if not value:
        return None
    if value not in allowed:
        raise InvalidRequest(f"Unknown {name} '{value}'.", param=name)
    return value


def parse_filters(params: dict[str, str]) -> CallFilters:
    """The Calls filters of a query string; unknown error classes and modes are refused."""
    status = _one_of(params.get("status"), ["ok", "error"], "status")
    modes = [FIXED_MODE, *(m.value for m in PolicyMode)]
    operations = [o.value for o in Operation]
    return CallFilters(
        configuration=text(params.get("configuration"), "configuration"),
        key=text(params.get("key"), "key"),
        model=text(params.get("model"), "model"),
        provider=text(params.get("provider"), "provider"),
        status=status,
        error_class=_one_of(params.get("error"), list(ERROR_CLASSES), "error"),
        mode=_one_of(params.get("mode"), modes, "mode"),
        operation=_one_of(params.get("operation"), operations, "operation"),
        since=moment(params.get("since"), "since"),
        until=moment(params.get("until"), "until"),
    )


async def calls_data(runtime: Runtime, params: dict[str, str]) -> dict[str, Any]:
    filters = parse_filters(params)
    before = call_id(params.get("before"), "before")
    after = call_id(params.get("after"), "after")
    if before is not None and after is not None:
        raise InvalidRequest("Give 'before' or 'after', not both.", param="after")
    found = await list_calls(runtime.engine, filters, size=PAGE_SIZE, before=before, after=after)
    return {"calls": found.calls, "older": found.older, "newer": found.newer}


async def providers_data(runtime: Runtime, now: datetime) -> dict[str, Any]:
    window = runtime.config.health.window_seconds
    since = now - timedelta(seconds=window)
    figures = await provider_figures(runtime.engine, since)
    health = runtime.snapshots.health_scores()
    breakers = runtime.breakers
    mono = time.monotonic()
    circuits = circuit_views(breakers, runtime.config.providers, mono)
    providers = []
    for provider in runtime.config.providers.values():
        mine = [f for f in figures if f["provider"] == provider.id]
        calls = sum(f["calls"] for f in mine)
        errors = sum(f["errors"] for f in mine)
        latency_total = sum((f["meanLatencyMs"] or 0.0) * f["calls"] for f in mine)
        providers.append(
            {
                "id": provider.id,
                "adapter": provider.adapter.value,
                "priority": provider.priority,
                "circuit": circuit_json(circuits[provider.id], now, mono),
                "consecutiveFailures": breakers.failures(provider.id),
                "health": health.get(provider.id),
                "calls": calls,
                "errors": errors,
                "successRate": (calls - errors) / calls if calls else None,
                "meanLatencyMs": latency_total / calls if calls else None,
            }
        )
    return {
        "since": iso(since.replace(microsecond=0)),
        "windowMinutes": window // 60,
        "providers": providers,
        "models": figures,
    }


def circuit_json(view: CircuitView, now: datetime, mono: float) -> dict[str, Any]:
    """``{state, until, trial}``: ``until`` (UTC, to the second) when refusing ends, for an
    open circuit and a running trial call; ``trial`` (``allowed``, ``in_flight``) when
    half-open."""
    until = None
    if view.until is not None:
        # Rounded, not truncated: the same moment read a little later stays the same second.
        ends = now + timedelta(seconds=max(0.0, view.until - mono))
        until = iso((ends + timedelta(microseconds=500_000)).replace(microsecond=0))
    return {"state": view.state, "until": until, "trial": view.trial}


async def budgets_data(runtime: Runtime, now: datetime) -> dict[str, Any]:
    config = runtime.config
    directory = runtime.directory  # the YAML's keys and teams and the database's
    served = directory.served_keys()
    teams = directory.teams()
    keys = [
        {
            "id": key.id,
            "team": key.team,
            "configurations": sorted(key.configurations)
            if key.configurations is not None
            else None,
            "budget": "own budget" if key.budget is not None else "none",
        }
        for key in served
    ]
    budgets = await budget_overview(runtime.engine, config, now, served, teams)
    return {"budgets": budgets, "keys": keys}


RANGE_DAYS = {"today": 1, "7d": 7, "30d": 30}


async def overview_data(runtime: Runtime, params: dict[str, str], now: datetime) -> dict[str, Any]:
    chosen = params.get("range") or "7d"
    if chosen not in RANGE_DAYS:
        raise InvalidRequest(f"Unknown range '{chosen}' (today, 7d, 30d).", param="range")
    today = now.astimezone(UTC).date()
    first = today - timedelta(days=RANGE_DAYS[chosen] - 1)
    figures = await overview_figures(runtime.engine, first, now, runtime.overview_days)
    days = [first + timedelta(days=n) for n in range((today - first).days + 1)]
    per_day = figures["costPerDay"]
    return {
        "range": chosen,
        "since": first.isoformat(),
        "totals": {
            "calls": figures["calls"],
            "cost": figures["cost"],
            "inputTokens": figures["inputTokens"],
            "outputTokens": figures["outputTokens"],
        },
        "rates": figures["rates"],
        "latency": figures["latency"],
        "costPerDay": [{"day": d.isoformat(), "cost": per_day.get(d, "0")} for d in days],
        "top": figures["top"],
    }
