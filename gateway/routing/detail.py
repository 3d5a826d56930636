"""A call's decision detail: what the console's decision view shows (docs/console.md).

The pipeline notes what it decided and attempted on a ``CallTrail``; the telemetry
writer turns the trail into the JSON of the row's ``routing_detail`` column, off the
request path. The decision part is the readout of ``/admin/routing/explain`` (the
same ``explain()``), plus the weights the mode gave each signal. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.routing.decision import Decision
from gateway.routing.readout import explain
from gateway.routing.signals import WEIGHTS

DETAIL_VERSION = 1
MAX_LISTED = 20  # candidates and rejections kept on a row; the counts stay exact


@dataclass(slots=True)
class AttemptNote:
    """One step of the plan: the primary or a fallback configuration."""

    configuration: str
    provider: str | None
    model: str | None
    # "served"; an upstream failure kind ("timeout", "http_5xx"…); "budget_refused" (a
    # fallback its own budget skipped); or why nothing was attempted ("no_eligible_model",
    # "circuit_open", "rate_limit_exceeded": its own rateLimit or its model's quota).
    outcome: str
    status: int | None = None  # the upstream's HTTP status, when it answered one
    retries: int = 0  # retries of this step before its outcome


@dataclass(slots=True)
class CallTrail:
    decision: Decision | None = None  # the primary's decision (criteria mode)
    fixed_model: str | None = None  # fixed mode: the configured model and its provider
    fixed_provider: str | None = None
    attempts: list[AttemptNote] = field(default_factory=list)
    error_message: str | None = None  # the gateway's own message of a failed call


def weights_of(decision: Decision) -> dict[str, float]:
    """The weight the decision's mode gives each signal (callCost shares cost's weight)."""
    return {signal.value: weight for signal, weight in WEIGHTS[decision.mode].per_signal().items()}


def decision_readout(decision: Decision) -> dict[str, Any]:
    readout = explain(decision)
    readout["weights"] = weights_of(decision)
    readout["candidateCount"] = decision.candidate_count
    readout["rejectedCount"] = len(readout["rejected"])
    readout["candidates"] = readout["candidates"][:MAX_LISTED]
    readout["rejected"] = readout["rejected"][:MAX_LISTED]
    return readout


def detail_document(
    trail: CallTrail, *, success: bool, error_class: str | None, http_status: int
) -> dict[str, Any]:
    """The ``routing_detail`` document of one call."""
    document: dict[str, Any] = {"v": DETAIL_VERSION}
    if trail.decision is not None:
        document["kind"] = "routed"
        document["decision"] = decision_readout(trail.decision)
    elif trail.fixed_model is not None:
        document["kind"] = "fixed"
        document["fixed"] = {"model": trail.fixed_model, "provider": trail.fixed_provider}
    else:
        document["kind"] = "none"
    document["attempts"] = [
        {
            "configuration": a.configuration,
            "provider": a.provider,
            "model": a.model,
            "outcome": a.outcome,
            "status": a.status,
            "retries": a.retries,
        }
        for a in trail.attempts
    ]
    document["error"] = (
        None
        if success
        else {"class": error_class, "status": http_status, "message": trail.error_message}
    )
    return document
