"""One call and its decision (docs/console.md#decision-view)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.api.console.html import (
    Column,
    Frame,
    count,
    esc,
    facts,
    ms,
    page,
    table,
    url,
)
from gateway.api.console.views.cells import served_cell, status_cell
from gateway.api.console.views.readout import readout_sections


def call_page(call: dict[str, Any], frame: Frame) -> str:
    detail = call["detail"]
    cost = call["cost"]
    summary = facts(
        [
            ("time (UTC)", esc(call["createdAt"])),
            ("correlation id", f"<code>{esc(call['correlationId'])}</code>"),
            ("configuration", esc(call["configuration"])),
            ("key", esc(call["key"] or "–")),
            ("operation", esc(call["operation"])),
            ("mode", esc(call["mode"])),
            ("status", status_cell(call)),
            ("HTTP status", esc(call["httpStatus"])),
            (
                "first attempted",
                esc(f"{call['model']} ({call['provider']})") if call["model"] else "–",
            ),
            ("served by", served_cell(call)),
            ("tokens in / out", f"{count(call['inputTokens'])} / {count(call['outputTokens'])}"),
            ("usage source", esc(call["usageSource"])),
            ("exact cost", f"<code>{esc(cost)}</code> USD" if cost is not None else "–"),
            ("latency", ms(call["latencyMs"])),
            ("time to first token", ms(call["ttftMs"])),
            ("fallback attempts", count(call["fallbackAttempts"])),
            ("provider retries", count(call["providerRetries"])),
            ("trace", _trace_cell(call)),
        ]
    )
    parts = [f"<h1>Call {esc(call['id'])}</h1>", summary]
    if not call["success"]:
        parts.append(_error_panel(call, detail))
    if call["cacheHit"]:
        parts.append(
            '<p class="panel info">Answered from the response cache: '
            "no decision, no upstream call.</p>"
        )
    if detail is not None:
        parts.append(_attempts(detail["attempts"]))
        if detail["kind"] == "routed":
            parts.append(_decision(detail["decision"], call, failed=not call["success"]))
        elif detail["kind"] == "fixed":
            fixed = detail["fixed"]
            parts.append(
                f"<h2>Decision</h2><p>Fixed mode: the configuration names "
                f"<strong>{esc(fixed['model'])}</strong> on {esc(fixed['provider'])}; "
                "no candidates are ranked.</p>"
            )
    elif not call["cacheHit"]:
        parts.append(
            '<p class="note">This row has no decision detail '
            "(written before the console existed).</p>"
        )
    return page(
        f"Call {call['id']}", "".join(parts), Frame(frame.active, frame.csrf, refresh=False)
    )


_ERROR_TITLES = {
    "budget_exceeded": "Refused by a budget",
    "budget_unavailable": "Refused: the budget database was unreachable",
    "budget_busy": "Refused: the budget database stayed too busy to check the call",
    "budget_error": "Refused: the budget check failed",
    "rate_limit_exceeded": "Refused by a rate limit",
    "rate_limit_unavailable": "Refused: the rate limiter's Redis was unreachable",
    "no_eligible_model": "No eligible model",
    "circuit_open": "Refused: circuit open",
}


def _error_panel(call: dict[str, Any], detail: dict[str, Any] | None) -> str:
    error_class = call["errorClass"] or "error"
    title = _ERROR_TITLES.get(error_class, f"Failed: {error_class}")
    message = detail["error"]["message"] if detail and detail.get("error") else None
    text = f"<p>{esc(message)}</p>" if message else ""
    return (
        f'<section class="panel" aria-label="Error"><h2>{esc(title)}</h2>'
        f"<p>Error class <code>{esc(error_class)}</code>, HTTP status "
        f"<code>{esc(call['httpStatus'])}</code>.</p>{text}</section>"
    )


def _attempts(attempts: Sequence[dict[str, Any]]) -> str:
    if not attempts:
        return ""
    columns = (
        Column("#", numeric=True),
        Column("configuration"),
        Column("model"),
        Column("provider"),
        Column("outcome"),
        Column("upstream status", numeric=True),
        Column("retries", numeric=True),
    )
    rows = []
    for index, a in enumerate(attempts, start=1):
        outcome = a["outcome"]
        shown = (
            f'<span class="good">{esc(outcome)}</span>'
            if outcome == "served"
            else f'<span class="bad">{esc(outcome)}</span>'
        )
        rows.append(
            [
                str(index),
                esc(a["configuration"]),
                esc(a["model"] or "–"),
                esc(a["provider"] or "–"),
                shown,
                esc(a["status"] or "–"),
                count(a["retries"]),
            ]
        )
    return f"<h2>Fallback chain</h2>{table(columns, rows, caption='Fallback chain')}"


def _decision(readout: dict[str, Any], call: dict[str, Any], *, failed: bool) -> str:
    why = url(
        "/admin/why", {"configuration": call["configuration"], "operation": call["operation"]}
    )
    title = "Decision (taken before the failure above)" if failed else "Decision"
    return (
        f"<h2>{title}</h2>{readout_sections(readout)}"
        f'<p><a href="{esc(why)}">Why this model now?</a> '
        "(the live readout for this configuration and operation)</p>"
    )


def _trace_cell(call: dict[str, Any]) -> str:
    """The call's OpenTelemetry trace id, linked by telemetry.otel.traceUrl when set."""
    trace = call.get("traceId")
    if not trace:
        return "–"
    link = call.get("traceUrl")
    if link:
        return f'<a href="{esc(link)}"><code>{esc(trace)}</code></a>'
    return f"<code>{esc(trace)}</code>"
