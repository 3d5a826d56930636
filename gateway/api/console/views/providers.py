"""Providers (docs/console.md#providers)."""

from __future__ import annotations

from typing import Any

from gateway.api.console.html import (
    Column,
    Frame,
    count,
    esc,
    ms,
    number,
    page,
    percent,
    table,
)


def circuit_cell(provider: dict[str, Any]) -> str:
    """The circuit as routing treats it now (gateway/circuits/view.py)."""
    circuit = provider["circuit"]
    state = circuit["state"]
    if state == "closed":
        return '<span class="good">closed</span>'
    if state == "open":
        return f'<span class="bad">open until {esc(circuit["until"])}</span>'
    if circuit["trial"] == "in_flight":
        return (
            '<span class="warn">half-open: trial call in flight '
            f"(others refused until its answer, at most until {esc(circuit['until'])})</span>"
        )
    return '<span class="warn">half-open: trial call allowed</span>'


# Calls, errors, success rate and mean latency: per provider and per model alike.
TRAFFIC_COLUMNS = (
    Column("calls", numeric=True),
    Column("errors", numeric=True),
    Column("success", numeric=True),
    Column("mean latency", numeric=True),
)


def traffic_cells(figures: dict[str, Any]) -> list[str]:
    calls, errors = figures["calls"], figures["errors"]
    return [
        count(calls),
        count(errors),
        percent(calls - errors, calls),
        ms(figures["meanLatencyMs"]),
    ]


def providers_page(data: dict[str, Any], frame: Frame) -> str:
    columns = (
        Column("provider"),
        Column("adapter"),
        Column("priority", numeric=True),
        Column("circuit"),
        Column("health", numeric=True),
        *TRAFFIC_COLUMNS,
    )
    rows = [
        [
            esc(p["id"]),
            esc(p["adapter"]),
            esc(p["priority"]),
            circuit_cell(p),
            number(p["health"], 3),
            *traffic_cells(p),
        ]
        for p in data["providers"]
    ]
    model_columns = (Column("provider"), Column("model"), *TRAFFIC_COLUMNS)
    model_rows = [[esc(m["provider"]), esc(m["model"]), *traffic_cells(m)] for m in data["models"]]
    body = (
        "<h1>Providers</h1>"
        f'<p class="note">Calls since {esc(data["since"])} '
        f"(the last {esc(data['windowMinutes'])} minutes, "
        "by the first attempted provider). Health is the routing signal; circuits are this "
        "process's own.</p>"
        f"{table(columns, rows, caption='Providers')}"
        "<h2>Per model</h2>"
        f"{table(model_columns, model_rows, caption='Models', empty='No call in the window.')}"
    )
    return page("Providers", body, frame)
