"""The Calls list and its filters (docs/console.md#calls)."""

from __future__ import annotations

from typing import Any

from gateway.api.console.html import (
    Column,
    Frame,
    count,
    esc,
    ms,
    page,
    select,
    table,
    url,
    usd,
)
from gateway.api.console.views.cells import choices, served_cell, status_cell

CALL_COLUMNS = (
    Column("time (UTC)"),
    Column("configuration"),
    Column("key"),
    Column("mode"),
    Column("served by"),
    Column("status"),
    Column("in tok", numeric=True),
    Column("out tok", numeric=True),
    Column("cost", numeric=True),
    Column("latency", numeric=True),
    Column("fallbacks", numeric=True),
)


def calls_page(
    data: dict[str, Any], options: dict[str, list[str]], query: dict[str, str], frame: Frame
) -> str:
    rows = []
    classes = []
    for call in data["calls"]:
        moment = esc(call["createdAt"][:19].replace("T", " "))
        link = f'<a href="/admin/calls/{call["id"]}">{moment}</a>'
        rows.append(
            [
                link,
                esc(call["configuration"]),
                esc(call["key"] or "–"),
                esc(call["mode"]),
                served_cell(call),
                status_cell(call),
                count(call["inputTokens"]),
                count(call["outputTokens"]),
                usd(float(call["cost"])) if call["cost"] is not None else "–",
                ms(call["latencyMs"]),
                count(call["fallbackAttempts"]),
            ]
        )
        classes.append("" if call["success"] else "fail")
    pager = []
    if data["newer"] is not None:
        pager.append(f'<a href="{esc(_page_url(query, "after", data["newer"]))}">← Newer</a>')
    if data["older"] is not None:
        pager.append(f'<a href="{esc(_page_url(query, "before", data["older"]))}">Older →</a>')
    body = (
        '<h1>Calls</h1><p class="note">Every call, fixed and routed, newest first. Filters '
        "are in the address: share it. Open a call's time for its decision.</p>"
        f"{_call_filters(options, query)}"
        f"{table(CALL_COLUMNS, rows, caption='Calls', row_classes=classes, empty=_NO_CALL)}"
        f'<nav class="pager" aria-label="Pages">{"".join(pager)}</nav>'
    )
    return page("Calls", body, frame)


_NO_CALL = "No call matches."


def _page_url(query: dict[str, str], bound: str, value: int) -> str:
    other = "before" if bound == "after" else "after"
    return url("/admin/calls", {**query, other: None, bound: str(value)})


def _moment_input(name: str, label: str, query: dict[str, str]) -> str:
    value = esc(query.get(name))
    return f'<label>{esc(label)}<input type="datetime-local" name="{name}" value="{value}"></label>'


def _call_filters(options: dict[str, list[str]], query: dict[str, str]) -> str:
    fields = [
        select(
            "configuration",
            "Configuration",
            choices(options["configurations"]),
            query.get("configuration"),
        ),
        select("key", "Key", choices(options["keys"]), query.get("key")),
        select("model", "Served model", choices(options["models"]), query.get("model")),
        select("provider", "Provider", choices(options["providers"]), query.get("provider")),
        select(
            "status", "Status", [("", "any"), ("ok", "ok"), ("error", "error")], query.get("status")
        ),
        select("error", "Error class", choices(options["errorClasses"]), query.get("error")),
        select("mode", "Mode", choices(options["modes"]), query.get("mode")),
        select("operation", "Operation", choices(options["operations"]), query.get("operation")),
        _moment_input("since", "From (UTC)", query),
        _moment_input("until", "Until (UTC)", query),
    ]
    return (
        '<form class="filters" method="get" action="/admin/calls" aria-label="Filters">'
        + "".join(fields)
        + '<button type="submit" class="primary">Apply</button>'
        '<a href="/admin/calls">Clear</a></form>'
    )
