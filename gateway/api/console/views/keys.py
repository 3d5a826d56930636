"""Keys and Teams (docs/console.md#keys and #teams).

The pages are rendered here; their writes (create, rotate, revoke) are made by the
console's script through the admin API (``/admin/keys``) with the page's CSRF token in
``X-CSRF-Token`` (gateway.api.governance). File keys and teams are read-only.
"""

from __future__ import annotations

from typing import Any

from gateway.api.console.html import Column, Frame, attr, esc, page, select, table, when
from gateway.api.console.views.budgets import measure_cell

KEYS_PATH = "/admin/manage/keys"
TEAMS_PATH = "/admin/manage/teams"


def _actions(key: dict[str, Any]) -> str:
    if key["source"] == "file":
        return '<span class="note">read-only (configuration file)</span>'
    if key["revokedAt"] is not None:
        return "–"
    ident = attr(key["id"])
    return (
        f'<button type="button" data-key-action="rotate" data-key-id="{ident}">Rotate</button> '
        f'<button type="button" data-key-action="revoke" data-key-id="{ident}">Revoke</button>'
    )


def _status(key: dict[str, Any]) -> str:
    status = key["status"]
    cls = "good" if status == "active" else "bad"
    return f'<span class="{cls}">{esc(status)}</span>'


def keys_page(
    keys: list[dict[str, Any]],
    teams: list[str],
    configurations: list[str],
    team: str | None,
    frame: Frame,
) -> str:
    columns = (
        Column("key id"),
        Column("team"),
        Column("prefix"),
        Column("source"),
        Column("status"),
        Column("created (UTC)"),
        Column("expires (UTC)"),
        Column("revoked (UTC)"),
        Column("last used (UTC)"),
        Column("actions"),
    )
    rows = [
        [
            esc(k["id"]),
            esc(k["team"] or "–"),
            f"<code>{esc(k['prefix'])}…</code>" if k["prefix"] else "–",
            esc(k["source"]),
            _status(k),
            when(k["createdAt"]),
            when(k["expiresAt"]),
            when(k["revokedAt"]),
            when(k["lastUsedAt"]),
            _actions(k),
        ]
        for k in keys
    ]
    team_filter = (
        f'<form class="filters" method="get" action="{KEYS_PATH}">'
        + select("team", "Team", [("", "every team"), *((t, t) for t in teams)], team)
        + '<button type="submit">Filter</button></form>'
    )
    team_choice = select("team", "Team", [("", "no team"), *((t, t) for t in teams)], None)
    options = "".join(f'<option value="{attr(c)}">{esc(c)}</option>' for c in configurations)
    create = (
        '<form id="create-key" class="filters">'
        '<label>Id (optional)<input name="id" autocomplete="off"></label>'
        f"{team_choice}"
        "<label>Configurations (none chosen: every one)"
        f'<select name="configurations" multiple size="4">{options}</select></label>'
        '<button type="submit" class="primary">Create key</button></form>'
    )
    shown = (
        '<div id="new-key" class="panel info" role="status" hidden>'
        '<p>The key <strong id="new-key-id"></strong>, shown this once: copy it now.</p>'
        '<p><code id="new-key-value"></code> '
        '<button type="button" id="copy-key">Copy</button> '
        '<span id="copy-state" class="note"></span></p>'
        f'<p><a href="{KEYS_PATH}">Reload the list</a></p></div>'
        '<div id="key-error" class="panel" role="alert" hidden></div>'
    )
    body = (
        f'<h1>Keys</h1><div id="keys" data-csrf="{attr(frame.csrf)}">'
        '<p class="note">Every key by id: the configuration file\'s (read-only) and the '
        "database's. A key itself is shown only once, when it is created or rotated.</p>"
        f"{team_filter}{shown}"
        f"{table(columns, rows, caption='Keys', empty='No key.')}"
        f"<h2>Create a key</h2>{create}</div>"
    )
    return page("Keys", body, frame)


def _budget(document: dict[str, Any] | None) -> str:
    if not document:
        return "none"
    parts = []
    for period, limits in document.items():
        inner = ", ".join(f"{name} {value}" for name, value in limits.items())
        parts.append(f"{period}: {inner}")
    return "; ".join(parts)


def _rate(document: dict[str, int] | None) -> str:
    if not document:
        return "none"
    names = {
        "requestsPerMinute": "requests/min",
        "tokensPerMinute": "tokens/min",
        "concurrent": "concurrent",
    }
    return ", ".join(f"{value:,} {names.get(name, name)}" for name, value in document.items())


def teams_page(teams: list[dict[str, Any]], budgets: list[dict[str, Any]], frame: Frame) -> str:
    spend: dict[str, list[str]] = {}
    for line in budgets:
        if line["scope"] == "team":
            spend.setdefault(line["id"], []).extend(
                f"{esc(line['period'])} {measure_cell(m)}" for m in line["measures"]
            )
    columns = (
        Column("team"),
        Column("source"),
        Column("may use", wrap=True),
        Column("budget", wrap=True),
        Column("spend this window / limit", wrap=True),
        Column("rate limit", wrap=True),
        Column("keys", numeric=True),
    )
    rows = [
        [
            esc(t["id"]),
            esc(t["source"]),
            esc(
                ", ".join(t["configurations"])
                if t["configurations"] is not None
                else "every configuration"
            ),
            esc(_budget(t["budget"])),
            "<br>".join(spend.get(t["id"], [])) or "– (no budget)",
            esc(_rate(t["rateLimit"])),
            f'<a href="{KEYS_PATH}?team={attr(t["id"])}">{t["keys"]:,}</a>',
        ]
        for t in teams
    ]
    body = (
        "<h1>Teams</h1>"
        '<p class="note">Each team with its budget, what its keys have used of it in the '
        "current window (every call of the team's keys, including what calls in flight "
        "hold), its rate limit and its keys.</p>"
        f"{table(columns, rows, caption='Teams', empty='No team is configured.')}"
    )
    return page("Teams", body, frame)
