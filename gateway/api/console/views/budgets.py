"""Budgets and keys (docs/console.md#budgets-and-keys)."""

from __future__ import annotations

from typing import Any

from gateway.api.console.html import (
    Column,
    Frame,
    count,
    esc,
    page,
    table,
    usd,
)


def measure_cell(m: dict[str, Any]) -> str:
    fraction = m["fraction"]
    cls = "bad" if fraction >= 1 else "warn" if fraction >= 0.8 else "good"
    used, limit = m["used"], m["limit"]
    if m["measure"] == "cost":
        used, limit = usd(float(used)), usd(float(limit))
    else:
        used, limit = count(int(used)), count(int(limit))
    return f'{esc(m["measure"])}: <span class="{cls}">{esc(used)}</span> / {esc(limit)}'


def budgets_page(data: dict[str, Any], frame: Frame) -> str:
    columns = (
        Column("scope"),
        Column("id"),
        Column("window"),
        Column("used / limit", wrap=True),
        Column("resets at (UTC)"),
    )
    rows = [
        [
            esc(b["scope"]),
            esc(b["id"]),
            esc(f"{b['period']} from {b['windowStart']}"),
            "<br>".join(measure_cell(m) for m in b["measures"]),
            esc(b["resetsAt"]),
        ]
        for b in data["budgets"]
    ]
    key_columns = (
        Column("key id"),
        Column("team"),
        Column("may use", wrap=True),
        Column("budget"),
    )
    key_rows = [
        [
            esc(k["id"]),
            esc(k["team"] or "–"),
            esc(
                ", ".join(k["configurations"])
                if k["configurations"] is not None
                else "every configuration"
            ),
            esc(k["budget"]),
        ]
        for k in data["keys"]
    ]
    body = (
        "<h1>Budgets and keys</h1>"
        '<p class="note">Each limited budget in its current window. Used includes what calls in '
        "flight hold. Keys are shown by id only.</p>"
        f"{table(columns, rows, caption='Budgets', empty='No budget is configured.')}"
        "<h2>Keys</h2>"
        f"{table(key_columns, key_rows, caption='Keys', empty='No key is configured.')}"
    )
    return page("Budgets and keys", body, frame)
