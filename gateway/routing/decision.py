"""What a routing decision hands down the pipeline: taken once, never re-taken."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.domain.model import CostBasis, Model, Operation, PolicyMode, Provider
from gateway.domain.signals import HistoryFigures, Signal, SignalValues
from gateway.routing.eligibility import Rejection, RejectionReason


@dataclass(frozen=True, slots=True)
class Candidate:
    model: Model
    provider: Provider
    rank: int  # 1-based
    score: float  # full precision
    # Readout semantics: None when the signal is not collected or has no value of its own
    # (a 0.5 fill for want of data shows None; a sole measured candidate shows its 0.5).
    signals: SignalValues
    history: HistoryFigures | None  # the raw aggregate, None when the history was not read
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Decision:
    configuration_id: str
    operation: Operation
    mode: PolicyMode
    mode_overridden: bool
    call_history: bool  # the history was read for this decision
    cost_basis: CostBasis | None  # None: cost not collected
    selected: Model | None
    candidates: tuple[Candidate, ...]  # eligible, in rank order
    rejected: tuple[Rejection, ...]
    signals_used: tuple[Signal, ...]  # in Signal order
    candidate_count: int  # active models considered, eligible and refused
    # What put the selected model first: "priority", "score", "cost" (preferLowestCost),
    # "default", "order" (config order), "onlyCandidate"; None when nothing is eligible.
    decided_by: str | None = None

    def outscored_by(self) -> tuple[Candidate, ...]:
        """Candidates scoring higher than the selected one that lost on provider priority."""
        if not self.candidates:
            return ()
        first = self.candidates[0]
        return tuple(
            c
            for c in self.candidates[1:]
            if c.provider.priority < first.provider.priority and c.score > first.score
        )

    def rejection_names(self) -> str:
        """Sorted distinct reason names, comma-joined (the row's ``routing_rejections``)."""
        return ",".join(sorted({r.reason.value for r in self.rejected}))

    def all_refusals_operation_capability(self) -> bool:
        """Every refusal is OPERATION_CAPABILITY_MISSING: 400, not 503, when nothing is left."""
        return bool(self.rejected) and all(
            r.reason is RejectionReason.OPERATION_CAPABILITY_MISSING for r in self.rejected
        )

    def refusal_reasons(self) -> str:
        """Each refused model and its reason, as the no_eligible_model message names them
        (pipeline/attempts.py): ``m1: REASON, m2: REASON``, or ``no active models``."""
        reasons = sorted({f"{r.model.id}: {r.reason.value}" for r in self.rejected})
        return ", ".join(reasons) or "no active models"

    @property
    def cost_basis_column(self) -> str:
        """The row's ``routing_cost_basis``: '' where cost is not collected."""
        return self.cost_basis or ""
