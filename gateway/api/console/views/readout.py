"""A decision as the readout describes it: its summary, candidates and rejected models
(the decision view and Why this model? both show it)."""

from __future__ import annotations

from typing import Any

from gateway.api.console.html import (
    Column,
    count,
    esc,
    facts,
    number,
    table,
    usd,
)
from gateway.domain.signals import Signal


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


def readout_sections(readout: dict[str, Any]) -> str:
    """The summary, then the candidates and the rejected models under their headings."""
    return (
        f"{readout_summary(readout)}"
        f"<h2>Candidates</h2>{candidates_table(readout)}"
        f"<h2>Rejected</h2>{rejected_table(readout)}"
    )
