"""The readout ("Why this model?"): a decision rendered as JSON and as a terminal table.

It renders a Decision that decide() took; it never re-applies a rule of its own.
"""

from __future__ import annotations

import math
from typing import Any

from gateway.domain.model import Configuration, ExplorationSettings, Model, Operation
from gateway.domain.signals import HistoryFigures, Signal
from gateway.routing.decision import Candidate, Decision
from gateway.routing.exploration import lacking_history

CIRCUIT_NOTE = (
    "Circuit states: not visible here. This reads the database the config names, "
    "not a running server, so no provider is shown as PROVIDER_UNAVAILABLE."
)


def explain(decision: Decision, exploration: ExplorationSettings | None = None) -> dict[str, Any]:
    selected = decision.candidates[0] if decision.candidates else None
    return {
        "configuration": decision.configuration_id,
        "fixed": False,
        "operation": decision.operation.value,
        "mode": decision.mode.value,
        "modeOverridden": decision.mode_overridden,
        "callHistory": decision.call_history,
        "costBasis": decision.cost_basis,
        "selected": (
            {"model": selected.model.id, "provider": selected.provider.id} if selected else None
        ),
        "candidates": [_candidate(c) for c in decision.candidates],
        "rejected": [
            {"model": r.model.id, "provider": r.provider, "reason": r.reason.value}
            for r in decision.rejected
        ],
        "signalsUsed": [signal.value for signal in decision.signals_used],
        "decidedBy": decision.decided_by,
        "outscoredBy": [_rival(c) for c in decision.outscored_by()],
        "exploration": _exploration(decision, exploration),
    }


def _exploration(decision: Decision, settings: ExplorationSettings | None) -> dict[str, Any] | None:
    """routing.exploration and the candidates it may send a call to now (none when off)."""
    if settings is None:
        return None
    pool = lacking_history(decision, settings.min_calls)
    return {
        "share": settings.share,
        "minCalls": settings.min_calls,
        "candidates": [{"model": c.model.id, "provider": c.provider.id} for c in pool],
    }


def explain_fixed(
    configuration: Configuration, model: Model, operation: Operation
) -> dict[str, Any]:
    """A fixed-mode configuration decides nothing: name its model and invent nothing else."""
    return {
        "configuration": configuration.id,
        "fixed": True,
        "operation": operation.value,
        "mode": None,
        "modeOverridden": False,
        "callHistory": False,
        "costBasis": None,
        "selected": {"model": model.id, "provider": model.provider},
        "candidates": [],
        "rejected": [],
        "signalsUsed": [],
        "decidedBy": None,
        "outscoredBy": [],
        "exploration": None,
    }


def _rival(candidate: Candidate) -> dict[str, Any]:
    provider = candidate.provider
    return {
        "model": candidate.model.id,
        "provider": provider.id,
        "priority": provider.priority,
        "score": candidate.score,
    }


def _candidate(candidate: Candidate) -> dict[str, Any]:
    return {
        "rank": candidate.rank,
        "model": candidate.model.id,
        "provider": candidate.provider.id,
        "adapterType": candidate.provider.adapter.value,
        "priority": candidate.provider.priority,
        "score": candidate.score,
        "signals": candidate.signals.by_name(),
        "history": _history(candidate.history),
        "warnings": list(candidate.warnings),
    }


def _history(figures: HistoryFigures | None) -> dict[str, Any] | None:
    if figures is None:
        return None
    total = figures.mean_latency_ms if figures.total_ms is None else figures.total_ms
    return {
        "calls": figures.calls,
        "meanLatencyMs": figures.mean_latency_ms,
        # docs/routing.md#call-history: the figure ranked on, which statistic of which
        # latency it is, and both latencies by that statistic.
        "latencyMs": figures.latency_ms,
        "latencyStatistic": figures.statistic,
        "latencyMeasure": figures.measure,
        "totalMs": total,
        "ttftMs": figures.ttft_ms,
        "costedCalls": figures.costed_calls,
        "meanCost": float(figures.mean_cost) if figures.mean_cost is not None else None,
    }


_SIGNAL_COLUMNS = tuple(signal.value for signal in Signal)
_COLUMNS = ("#", "model", "provider", "adapter", "prio", "score", *_SIGNAL_COLUMNS, "history")


def render_table(explained: dict[str, Any]) -> str:
    """The same decision as a terminal table, for ``gateway explain``."""
    lines = [
        f"configuration: {explained['configuration']}   operation: {explained['operation']}",
    ]
    selected = explained["selected"]
    chosen = f"{selected['model']} on {selected['provider']}" if selected else "none eligible"
    if explained["fixed"]:
        lines.append(f"fixed: serves {chosen}; no decision is taken")
        return "\n".join(lines) + "\n"
    overridden = " (overridden)" if explained["modeOverridden"] else ""
    lines.append(
        f"mode: {explained['mode']}{overridden}   "
        f"call history: {'read' if explained['callHistory'] else 'not read'}   "
        f"cost basis: {explained['costBasis'] or '-'}"
    )
    lines.append(f"selected: {chosen}")
    lines.extend(_decided_lines(explained))
    lines.append("")
    lines.extend(_table([_row(c) for c in explained["candidates"]]))
    for candidate in explained["candidates"]:
        for warning in candidate["warnings"]:
            lines.append(f"warning: {candidate['model']}: {warning}")
    for rejection in explained["rejected"]:
        lines.append(
            f"rejected: {rejection['model']} ({rejection['provider']}): {rejection['reason']}"
        )
    lines.append(f"signals used: {', '.join(explained['signalsUsed']) or 'none'}")
    lines.extend(_exploration_lines(explained["exploration"], explained["callHistory"]))
    lines.append(CIRCUIT_NOTE)
    return "\n".join(lines) + "\n"


_DECIDED = {
    "priority": "provider priority",
    "score": "score",
    "cost": "lowest cost (preferLowestCost)",
    "default": "the model marked default",
    "order": "config order (a tie on everything else)",
    "onlyCandidate": "the only eligible candidate",
}


def _decided_lines(explained: dict[str, Any]) -> list[str]:
    by = explained["decidedBy"]
    if by is None:
        return []
    lines = [f"decided by: {_DECIDED.get(by, by)}"]
    selected = explained["candidates"][0]
    for rival in explained["outscoredBy"]:
        lines.append(
            f"note: priority decided over score: {rival['model']} ({rival['provider']}, "
            f"priority {rival['priority']}) scores {rival['score']:.5f}, above "
            f"{selected['model']}'s {selected['score']:.5f} (priority {selected['priority']})"
        )
    return lines


def _exploration_lines(exploration: dict[str, Any] | None, history_read: bool) -> list[str]:
    if exploration is None:
        return []
    head = f"exploration: up to {exploration['share']:.2%} of calls"
    pool = exploration["candidates"]
    if pool:
        names = ", ".join(f"{c['model']} ({c['provider']})" for c in pool)
        return [f"{head} may go to {names}: fewer than {exploration['minCalls']} calls"]
    if not history_read:
        return [f"{head}; none now: this decision read no call history"]
    return [f"{head}; none now: every other candidate has {exploration['minCalls']} calls"]


def _row(candidate: dict[str, Any]) -> list[str]:
    signals = candidate["signals"]
    return [
        str(candidate["rank"]),
        candidate["model"],
        candidate["provider"],
        candidate["adapterType"],
        str(candidate["priority"]),
        f"{candidate['score']:.5f}",
        *(_number(signals[name]) for name in _SIGNAL_COLUMNS),
        _history_cell(candidate["history"]),
    ]


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.5f}"


def _history_cell(history: dict[str, Any] | None) -> str:
    if history is None or history["calls"] == 0:
        return "no data"
    latency = history["latencyMs"]
    text = f"{history['calls']} calls"
    if latency is not None:
        # Named: "mean 4259.0 ms" (total latency), "p50 ttft 310.0 ms (total 2200.0 ms)".
        if history["latencyMeasure"] == "ttft":
            text += f", {history['latencyStatistic']} ttft {latency:.1f} ms"
            if history["totalMs"] is not None:
                text += f" (total {history['totalMs']:.1f} ms)"
        else:
            text += f", {history['latencyStatistic']} {latency:.1f} ms"
    if history["meanCost"] is not None:
        # Calls cost fractions of a cent: four significant digits, never an exponent.
        text += f", ${_money(history['meanCost'])} over {history['costedCalls']}"
    return text


def _money(value: float) -> str:
    if value == 0:
        return "0"
    digits = max(4, 3 - math.floor(math.log10(abs(value))))
    return f"{value:.{digits}f}"


def _table(rows: list[list[str]]) -> list[str]:
    if not rows:
        return ["(no eligible candidate)"]
    widths = [max(len(r[i]) for r in [list(_COLUMNS), *rows]) for i in range(len(_COLUMNS))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [list(_COLUMNS), *rows]
    ]
