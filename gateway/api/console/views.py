"""The console's views: data (the same dicts the /admin/api endpoints answer) to HTML (pure).

Each view is described in docs/console.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.api.console.html import (
    Column,
    Frame,
    bar_chart,
    card,
    count,
    document,
    esc,
    facts,
    ms,
    number,
    page,
    percent,
    select,
    table,
    url,
    usd,
)
from gateway.domain.signals import Signal

# Overview -------------------------------------------------------------------------------

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


# Calls ----------------------------------------------------------------------------------

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


def status_cell(call: dict[str, Any]) -> str:
    if call["success"]:
        return '<span class="good">ok</span>' + (" (cache)" if call["cacheHit"] else "")
    return (
        f'<span class="bad">{esc(call["httpStatus"])} {esc(call["errorClass"] or "error")}</span>'
    )


def served_cell(call: dict[str, Any]) -> str:
    if call["servedModel"]:
        return f"{esc(call['servedModel'])} <small>({esc(call['servedProvider'])})</small>"
    if call["model"]:
        return f"– <small>(tried {esc(call['model'])})</small>"
    return "–"


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


def _choices(values: Sequence[str], everything: str = "any") -> list[tuple[str, str]]:
    return [("", everything), *((v, v) for v in values)]


def _call_filters(options: dict[str, list[str]], query: dict[str, str]) -> str:
    fields = [
        select(
            "configuration",
            "Configuration",
            _choices(options["configurations"]),
            query.get("configuration"),
        ),
        select("key", "Key", _choices(options["keys"]), query.get("key")),
        select("model", "Served model", _choices(options["models"]), query.get("model")),
        select("provider", "Provider", _choices(options["providers"]), query.get("provider")),
        select(
            "status", "Status", [("", "any"), ("ok", "ok"), ("error", "error")], query.get("status")
        ),
        select("error", "Error class", _choices(options["errorClasses"]), query.get("error")),
        select("mode", "Mode", _choices(options["modes"]), query.get("mode")),
        select("operation", "Operation", _choices(options["operations"]), query.get("operation")),
        _moment_input("since", "From (UTC)", query),
        _moment_input("until", "Until (UTC)", query),
    ]
    return (
        '<form class="filters" method="get" action="/admin/calls" aria-label="Filters">'
        + "".join(fields)
        + '<button type="submit" class="primary">Apply</button>'
        '<a href="/admin/calls">Clear</a></form>'
    )


# Decision view --------------------------------------------------------------------------


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
    "budget_error": "Refused: the budget check failed",
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


def candidates_table(readout: dict[str, Any]) -> str:
    weights = readout.get("weights") or {}
    columns = [
        Column("#", numeric=True),
        Column("model"),
        Column("provider"),
        Column("priority", numeric=True),
        Column("score", numeric=True),
    ]
    columns.extend(
        Column(f"{name} (w {weights[name]:g})" if name in weights else name, numeric=True)
        for name in (signal.value for signal in Signal)
    )
    columns.append(Column("history", wrap=True))
    rows = []
    for c in readout["candidates"]:
        history = c.get("history")
        history_text = (
            "not read"
            if history is None
            else (
                f"{history['calls']} calls"
                + (
                    f", {history['meanLatencyMs']:.0f} ms"
                    if history.get("meanLatencyMs") is not None
                    else ""
                )
                + (
                    f", {usd(history['meanCost'])}/call"
                    if history.get("meanCost") is not None
                    else ""
                )
            )
        )
        rows.append(
            [
                str(c["rank"]),
                f"<strong>{esc(c['model'])}</strong>" if c["rank"] == 1 else esc(c["model"]),
                esc(c["provider"]),
                esc(c["priority"]),
                number(c["score"], 5),
                *(number(c["signals"].get(signal.value), 4) for signal in Signal),
                esc(history_text),
            ]
        )
    return table(columns, rows, caption="Candidates", empty="No eligible candidate.")


def rejected_table(readout: dict[str, Any]) -> str:
    columns = (Column("model"), Column("provider"), Column("reason"))
    rows = [
        [esc(r["model"]), esc(r["provider"]), f"<code>{esc(r['reason'])}</code>"]
        for r in readout["rejected"]
    ]
    return table(columns, rows, caption="Rejected models", empty="No model was rejected.")


_DECIDED = {
    "priority": "provider priority",
    "score": "the score",
    "cost": "the lowest cost (preferLowestCost)",
    "default": "the model marked default",
    "order": "configuration order (a tie on everything else)",
    "onlyCandidate": "being the only eligible candidate",
}


def readout_summary(readout: dict[str, Any]) -> str:
    selected = readout["selected"]
    chosen = f"{selected['model']} on {selected['provider']}" if selected else "none eligible"
    decided = readout.get("decidedBy")
    notes = "".join(
        f"<li>Priority decided over score: {esc(r['model'])} ({esc(r['provider'])}, "
        f"priority {esc(r['priority'])}) scores {number(r['score'], 5)}.</li>"
        for r in readout.get("outscoredBy", [])
    )
    pairs = [
        ("selected", f"<strong>{esc(chosen)}</strong>"),
        ("mode", esc(readout["mode"]) + (" (overridden)" if readout.get("modeOverridden") else "")),
        ("decided by", esc(_DECIDED.get(decided, decided)) if decided else "–"),
        ("signals that moved it", esc(", ".join(readout["signalsUsed"]) or "none")),
        ("cost basis", esc(readout["costBasis"] or "not collected")),
        ("call history", "read" if readout["callHistory"] else "not read"),
    ]
    if "candidateCount" in readout:
        pairs.append(("models considered", count(readout["candidateCount"])))
    return facts(pairs) + (f"<ul>{notes}</ul>" if notes else "")


def _decision(readout: dict[str, Any], call: dict[str, Any], *, failed: bool) -> str:
    why = url(
        "/admin/why", {"configuration": call["configuration"], "operation": call["operation"]}
    )
    title = "Decision (taken before the failure above)" if failed else "Decision"
    return (
        f"<h2>{title}</h2>"
        f"{readout_summary(readout)}"
        f"<h2>Candidates</h2>{candidates_table(readout)}"
        f"<h2>Rejected</h2>{rejected_table(readout)}"
        f'<p><a href="{esc(why)}">Why this model now?</a> '
        "(the live readout for this configuration and operation)</p>"
    )


# Why this model? ------------------------------------------------------------------------


def why_page(
    readout: dict[str, Any] | None,
    options: dict[str, list[str]],
    query: dict[str, str],
    error: str | None,
    frame: Frame,
) -> str:
    form = (
        '<form class="filters" method="get" action="/admin/why" aria-label="Readout">'
        + select(
            "configuration",
            "Configuration",
            [(c, c) for c in options["configurations"]],
            query.get("configuration"),
        )
        + select(
            "operation",
            "Operation",
            [(o, o) for o in options["operations"]],
            query.get("operation") or "chat",
        )
        + select(
            "mode",
            "Mode override",
            _choices(options["policyModes"], "the configuration's"),
            query.get("mode"),
        )
        + '<button type="submit" class="primary">Explain</button></form>'
    )
    parts = [
        "<h1>Why this model?</h1>",
        '<p class="note">The live readout: the very decision function the proxy runs, on this '
        "process's current signals and circuits (as <code>/admin/routing/explain</code>).</p>",
        form,
    ]
    if error:
        parts.append(f'<p class="panel">{esc(error)}</p>')
    if readout is not None:
        if readout["fixed"]:
            selected = readout["selected"]
            parts.append(
                f"<p>Fixed mode: serves <strong>{esc(selected['model'])}</strong> on "
                f"{esc(selected['provider'])}; no decision is taken.</p>"
            )
        else:
            parts.append(readout_summary(readout))
            parts.append(f"<h2>Candidates</h2>{candidates_table(readout)}")
            parts.append(f"<h2>Rejected</h2>{rejected_table(readout)}")
    return page("Why this model?", "".join(parts), Frame(frame.active, frame.csrf, refresh=False))


# Providers ------------------------------------------------------------------------------


def circuit_cell(provider: dict[str, Any]) -> str:
    state = provider["circuit"]
    if state == "closed":
        return '<span class="good">closed</span>'
    if state == "open":
        return f'<span class="bad">open until {esc(provider["openUntil"])}</span>'
    return '<span class="warn">half-open (probing)</span>'


def providers_page(data: dict[str, Any], frame: Frame) -> str:
    columns = (
        Column("provider"),
        Column("adapter"),
        Column("priority", numeric=True),
        Column("circuit"),
        Column("health", numeric=True),
        Column("calls", numeric=True),
        Column("errors", numeric=True),
        Column("success", numeric=True),
        Column("mean latency", numeric=True),
    )
    rows = [
        [
            esc(p["id"]),
            esc(p["adapter"]),
            esc(p["priority"]),
            circuit_cell(p),
            number(p["health"], 3),
            count(p["calls"]),
            count(p["errors"]),
            percent(p["calls"] - p["errors"], p["calls"]),
            ms(p["meanLatencyMs"]),
        ]
        for p in data["providers"]
    ]
    model_columns = (
        Column("provider"),
        Column("model"),
        Column("calls", numeric=True),
        Column("errors", numeric=True),
        Column("success", numeric=True),
        Column("mean latency", numeric=True),
    )
    model_rows = [
        [
            esc(m["provider"]),
            esc(m["model"]),
            count(m["calls"]),
            count(m["errors"]),
            percent(m["calls"] - m["errors"], m["calls"]),
            ms(m["meanLatencyMs"]),
        ]
        for m in data["models"]
    ]
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


# Budgets and keys -----------------------------------------------------------------------


def _measure(m: dict[str, Any]) -> str:
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
            "<br>".join(_measure(m) for m in b["measures"]),
            esc(b["resetsAt"]),
        ]
        for b in data["budgets"]
    ]
    key_columns = (Column("key id"), Column("may use", wrap=True), Column("budget"))
    key_rows = [
        [
            esc(k["id"]),
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


# Sign-in --------------------------------------------------------------------------------


def sign_in_page(csrf: str, next_path: str, message: str | None, available: bool) -> str:
    notice = f'<p class="panel" role="alert">{esc(message)}</p>' if message else ""
    if not available:
        form = (
            '<p class="panel">No <code>auth.adminKey</code> is configured: '
            "the console cannot be signed in to.</p>"
        )
    else:
        form = (
            '<form method="post" action="/admin/sign-in">'
            f'<input type="hidden" name="csrf" value="{esc(csrf)}">'
            f'<input type="hidden" name="next" value="{esc(next_path)}">'
            '<label for="key">Admin key</label>'
            '<input id="key" name="key" type="password" autocomplete="current-password" '
            "required autofocus>"
            '<button type="submit" class="primary">Sign in</button></form>'
        )
    body = f'<main id="main" class="signin"><h1>Gateway console</h1>{notice}{form}</main>'
    return document("Sign in", body)
