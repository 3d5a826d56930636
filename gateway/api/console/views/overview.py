"""The Overview (docs/console.md#overview)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.api.console.html import (
    Column,
    Frame,
    bar_chart,
    card,
    count,
    esc,
    ms,
    page,
    percent,
    table,
    usd,
)

RANGES: tuple[tuple[str, str], ...] = (("today", "Today"), ("7d", "7 days"), ("30d", "30 days"))


def overview_page(data: dict[str, Any], frame: Frame) -> str:
    totals = data["totals"]
    rates = data["rates"]
    latency = data["latency"]
    chosen = data["range"]
    links = " · ".join(_range_link(key, label, chosen) for key, label in RANGES)
    cards = "".join(
        [
            card("Calls answered", count(totals["calls"])),
            card("Error rate", percent(rates["errors"], rates["calls"])),
            card("Cost", usd(totals["cost"])),
            card("Input tokens", count(totals["inputTokens"])),
            card("Output tokens", count(totals["outputTokens"])),
            card("Cache hit rate", percent(rates["cacheHits"], rates["calls"])),
            card("Latency p50", ms(latency["p50Ms"])),
            card("Latency p95", ms(latency["p95Ms"])),
            card("Stream TTFT p50", ms(latency["ttftP50Ms"])),
            card("Stream TTFT p95", ms(latency["ttftP95Ms"])),
        ]
    )
    days = [(d["day"], float(d["cost"])) for d in data["costPerDay"]]
    tops = "".join(
        _top_table(title, data["top"][name])
        for name, title in (
            ("configurations", "Top configurations by cost"),
            ("keys", "Top keys by cost"),
            ("teams", "Top teams by cost"),
            ("models", "Top served models by cost"),
        )
    )
    body = (
        f'<h1>Overview</h1><p class="note">Range: {links} (UTC days, since '
        f"{esc(data['since'])}). Calls answered, tokens and cost: every answered call of "
        f"the range; error and cache hit rates: all its {count(rates['calls'])} calls. "
        "Percentiles come from the latency histogram (within about 9 %) of the "
        f"{count(latency['calls'])} calls that succeeded at the first attempt and were "
        "not cache hits.</p>"
        f'<section aria-label="Totals" class="cards">{cards}</section>'
        f"<h2>Cost per day</h2>{bar_chart(days, label='Cost per day')}"
        f'<div class="twocol">{tops}</div>'
    )
    return page("Overview", body, frame)


def _range_link(key: str, label: str, chosen: str) -> str:
    current = ' aria-current="true"' if key == chosen else ""
    return f'<a href="/admin/?range={key}"{current}>{esc(label)}</a>'


def _top_table(title: str, rows: Sequence[dict[str, Any]]) -> str:
    columns = (Column("name"), Column("calls", numeric=True), Column("cost", numeric=True))
    cells = [[esc(r["name"] or "–"), count(r["calls"]), usd(float(r["cost"]))] for r in rows]
    return f"<section><h2>{esc(title)}</h2>{table(columns, cells, caption=title)}</section>"
