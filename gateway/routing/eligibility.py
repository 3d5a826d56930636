"""Eligibility: the hard filter before ranking (docs/routing.md#eligibility).

Checks run in the spec's order and the first failure is the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from gateway.domain.model import (
    Capability,
    Configuration,
    Criteria,
    Enforcement,
    Model,
    Provider,
    RoutingSettings,
)


class RejectionReason(StrEnum):
    CAPABILITY_MISSING = "CAPABILITY_MISSING"
    ADAPTER_NOT_ALLOWED = "ADAPTER_NOT_ALLOWED"
    CONTEXT_TOO_SMALL = "CONTEXT_TOO_SMALL"
    COST_ABOVE_LIMIT = "COST_ABOVE_LIMIT"
    PROVIDER_UNAVAILABLE = "PROVIDER_UNAVAILABLE"
    OPERATION_CAPABILITY_MISSING = "OPERATION_CAPABILITY_MISSING"
    # At its models[].rateLimit for this call (gateway.limits): set by the pipeline after the
    # decision, never by check() (a decision is shared; the limiter's state is per call).
    RATE_LIMITED = "RATE_LIMITED"


@dataclass(frozen=True, slots=True)
class Rejection:
    model: Model
    provider: str  # provider id
    reason: RejectionReason


@dataclass(frozen=True, slots=True)
class Verdict:
    reason: RejectionReason | None  # None: eligible
    warning: str | None = None  # observe mode: what enforce mode would have refused


ELIGIBLE = Verdict(None)


def _criteria_reason(
    model: Model, provider: Provider, criteria: Criteria
) -> RejectionReason | None:
    if criteria.capabilities and not criteria.capabilities <= model.capabilities:
        return RejectionReason.CAPABILITY_MISSING
    if criteria.adapter_types is not None and provider.adapter not in criteria.adapter_types:
        return RejectionReason.ADAPTER_NOT_ALLOWED
    if criteria.min_context_length > 0 and (
        model.context_length is None or model.context_length < criteria.min_context_length
    ):
        return RejectionReason.CONTEXT_TOO_SMALL
    # An unknown price passes: the limit refuses only what it knows to be above it.
    price = model.price
    if criteria.max_cost_input > 0 and price is not None and price.input > criteria.max_cost_input:
        return RejectionReason.COST_ABOVE_LIMIT
    return None


def missing_for_operation(model: Model, required: frozenset[Capability]) -> frozenset[Capability]:
    """Required capabilities the model does not declare; an empty list declares nothing, so none."""
    if not model.capabilities:
        return frozenset()
    return required - model.capabilities


def enforcement_for(configuration: Configuration, routing: RoutingSettings) -> Enforcement:
    """The configuration's own ``operationCapabilityEnforcement``, else the routing default."""
    own = configuration.operation_capability_enforcement
    return own or routing.operation_capability_enforcement


def check(
    model: Model,
    provider: Provider,
    criteria: Criteria,
    required: frozenset[Capability],
    open_circuits: frozenset[str],
    enforcement: Enforcement,
) -> Verdict:
    reason = _criteria_reason(model, provider, criteria)
    if reason is not None:
        return Verdict(reason)
    if provider.id in open_circuits:
        return Verdict(RejectionReason.PROVIDER_UNAVAILABLE)
    missing = missing_for_operation(model, required)
    if not missing:
        return ELIGIBLE
    if enforcement is Enforcement.OBSERVE:
        names = ", ".join(sorted(missing))
        return Verdict(None, f"{RejectionReason.OPERATION_CAPABILITY_MISSING}: {names}")
    return Verdict(RejectionReason.OPERATION_CAPABILITY_MISSING)
