"""Why this model? (docs/console.md#why-this-model)."""

from __future__ import annotations

from typing import Any

from gateway.api.console.html import (
    Frame,
    esc,
    page,
    select,
)
from gateway.api.console.views.cells import choices
from gateway.api.console.views.readout import readout_sections


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
            choices(options["policyModes"], "the configuration's"),
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
            parts.append(readout_sections(readout))
    return page("Why this model?", "".join(parts), Frame(frame.active, frame.csrf, refresh=False))
