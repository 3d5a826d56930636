"""HTML building blocks of the console: escaping, the page frame, tables, figures (pure).

Every value that reaches a page goes through ``esc`` (or ``attr``); pages carry no
inline script or style, so the CSP admits only the console's own two files.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

NAV: tuple[tuple[str, str, str], ...] = (
    ("overview", "/admin/", "Overview"),
    ("calls", "/admin/calls", "Calls"),
    ("why", "/admin/why", "Why this model?"),
    ("providers", "/admin/providers", "Providers"),
    ("budgets", "/admin/budgets", "Budgets and keys"),
    ("keys", "/admin/manage/keys", "Keys"),
    ("teams", "/admin/manage/teams", "Teams"),
)
REFRESH_SECONDS = 30


def esc(value: object) -> str:
    if value is None:
        return ""
    return html.escape(str(value), quote=True)


def attr(value: object) -> str:
    return esc(value)


def url(path: str, params: dict[str, str | None]) -> str:
    kept = {k: v for k, v in params.items() if v not in (None, "")}
    return f"{path}?{urlencode(kept)}" if kept else path


@dataclass(frozen=True, slots=True)
class Frame:
    """What the page frame needs besides the body."""

    active: str  # a NAV key, or "" (sign-in)
    csrf: str | None  # the sign-out form's token; None: no sign-out (keyless, bearer)
    refresh: bool = True


def page(title: str, body: str, frame: Frame) -> str:
    current = ' aria-current="page"'
    nav = "".join(
        f'<li><a href="{href}"{current if key == frame.active else ""}>{esc(label)}</a></li>'
        for key, href, label in NAV
    )
    sign_out = (
        '<form class="inline" method="post" action="/admin/sign-out">'
        f'<input type="hidden" name="csrf" value="{attr(frame.csrf)}">'
        '<button type="submit">Sign out</button></form>'
        if frame.csrf is not None
        else ""
    )
    refresh = (
        '<button type="button" id="refresh" hidden aria-pressed="false">Auto-refresh</button>'
        if frame.refresh
        else ""
    )
    header = (
        '<header class="top"><span class="brand">Gateway console</span>'
        f'<nav aria-label="Console"><ul>{nav}</ul></nav>'
        f'<div class="tools">{refresh}{sign_out}</div></header>'
    )
    data_refresh = REFRESH_SECONDS if frame.refresh else 0
    return document(
        title,
        f'<a class="skip" href="#main">Skip to content</a>{header}<main id="main">{body}</main>',
        data_refresh,
    )


def document(title: str, body: str, refresh_seconds: int = 0) -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · Gateway console</title>"
        '<link rel="icon" href="/admin/static/icon.svg" type="image/svg+xml">'
        '<link rel="stylesheet" href="/admin/static/console.css">'
        '<script src="/admin/static/console.js" defer></script>'
        f'</head><body data-refresh="{refresh_seconds}">{body}</body></html>'
    )


@dataclass(frozen=True, slots=True)
class Column:
    label: str
    numeric: bool = False
    wrap: bool = False


def table(
    columns: Sequence[Column],
    rows: Iterable[Sequence[str]],
    *,
    caption: str,
    row_classes: Sequence[str] | None = None,
    empty: str = "Nothing to show.",
) -> str:
    """A scrollable table; cells are HTML already (escape them with ``esc``)."""
    num = ' class="num"'
    head = "".join(
        f'<th scope="col"{num if c.numeric else ""}>{esc(c.label)}</th>' for c in columns
    )
    body: list[str] = []
    for index, row in enumerate(rows):
        cls = row_classes[index] if row_classes is not None else ""
        cells = "".join(
            f"<td{_cell_class(column)}>{cell}</td>"
            for column, cell in zip(columns, row, strict=True)
        )
        opening = f'<tr class="{cls}">' if cls else "<tr>"
        body.append(f"{opening}{cells}</tr>")
    if not body:
        body.append(f'<tr><td colspan="{len(columns)}">{esc(empty)}</td></tr>')
    return (
        f'<div class="scroll" tabindex="0" role="region" aria-label="{attr(caption)}">'
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def _cell_class(column: Column) -> str:
    if column.numeric:
        return ' class="num"'
    if column.wrap:
        return ' class="wrap"'
    return ""


def facts(pairs: Iterable[tuple[str, str]]) -> str:
    """A definition list; values are HTML already."""
    return (
        '<dl class="facts">'
        + "".join(f"<dt>{esc(label)}</dt><dd>{value}</dd>" for label, value in pairs)
        + "</dl>"
    )


def card(label: str, value: str) -> str:
    return (
        f'<div class="card"><div class="label">{esc(label)}</div>'
        f'<div class="value">{esc(value)}</div></div>'
    )


def select(name: str, label: str, options: Iterable[tuple[str, str]], chosen: str | None) -> str:
    items = "".join(
        f'<option value="{attr(value)}"{" selected" if value == (chosen or "") else ""}>'
        f"{esc(text)}</option>"
        for value, text in options
    )
    return f'<label>{esc(label)}<select name="{attr(name)}">{items}</select></label>'


# Figures -------------------------------------------------------------------------------


def usd(value: Decimal | float | None) -> str:
    """Dollars with four significant digits for fractions of a cent, never an exponent."""
    if value is None:
        return "–"
    number = float(value)
    if number == 0:
        return "$0"
    if abs(number) >= 100:
        return f"${number:,.2f}"
    digits = max(2, 3 - math.floor(math.log10(abs(number))))  # four significant digits
    text = f"{number:.{min(digits, 10)}f}"
    whole, _, fraction = text.partition(".")
    fraction = fraction.rstrip("0").ljust(2, "0")
    return f"${whole}.{fraction}"


def count(value: int | None) -> str:
    return "–" if value is None else f"{value:,}"


def ms(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f} ms"


def percent(part: float | None, whole: float | None) -> str:
    return "–" if part is None or not whole else f"{100.0 * part / whole:.1f}%"


def number(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def when(moment: datetime | str | None) -> str:
    if moment is None:
        return "–"
    if isinstance(moment, str):
        return esc(moment)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def bar_chart(points: Sequence[tuple[str, float]], *, label: str, unit: str = "$") -> str:
    """A server-side SVG bar chart (one bar per point), with a text table for screen readers."""
    width, height, left, bottom, top = 900, 220, 56, 28, 10
    top_value = max((v for _, v in points), default=0.0)
    scale = top_value if top_value > 0 else 1.0
    inner_w, inner_h = width - left - 8, height - bottom - top
    slot = inner_w / max(1, len(points))
    bars: list[str] = []
    step = max(1, math.ceil(len(points) / 10))  # at most ten date labels
    for index, (name, value) in enumerate(points):
        h = inner_h * value / scale
        x = left + index * slot + slot * 0.15
        y = top + inner_h - h
        text = f"{name}: {usd(value) if unit == '$' else value}"
        bars.append(
            f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{slot * 0.7:.1f}" '
            f'height="{h:.1f}"><title>{esc(text)}</title></rect>'
        )
        if index % step == 0:
            bars.append(
                f'<text x="{left + index * slot + slot / 2:.1f}" y="{height - 8}" '
                f'text-anchor="middle">{esc(name[5:] if len(name) == 10 else name)}</text>'
            )
    axis = (
        f'<text x="{left - 6}" y="{top + 10}" text-anchor="end">{esc(usd(top_value))}</text>'
        f'<text x="{left - 6}" y="{top + inner_h}" text-anchor="end">$0</text>'
        f'<line x1="{left}" y1="{top + inner_h}" x2="{width - 8}" y2="{top + inner_h}" '
        'stroke="#767676"/>'
    )
    return (
        f'<figure><svg class="chart" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{attr(label)}">{axis}{"".join(bars)}</svg></figure>'
    )


def flags(values: dict[str, Any]) -> str:
    return ", ".join(esc(k) for k, v in values.items() if v) or "none"
