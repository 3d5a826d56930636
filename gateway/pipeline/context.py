"""One call's state as it moves through the pipeline, and the row it becomes."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from gateway.domain.clock import utc_now
from gateway.domain.errors import RateLimitExceeded
from gateway.domain.model import Configuration, Model, Provider
from gateway.domain.settings import ApiKey
from gateway.domain.signals import Signal
from gateway.hooks import Reservation
from gateway.inbound import InboundRequest
from gateway.limits import Ticket
from gateway.limits.decisions import Reading, Scope
from gateway.routing.decision import Decision
from gateway.routing.detail import AttemptNote, CallTrail
from gateway.telemetry.records import TelemetryRecord
from gateway.tracing import CallSpan


@dataclass(slots=True)
class Target:
    """Where one configuration of the plan resolved to."""

    configuration: Configuration
    model: Model
    provider: Provider
    decision: Decision | None  # None for fixed mode


def trail_of(record: TelemetryRecord) -> CallTrail:
    """The record's decision detail, started on first use."""
    if record.trail is None:
        record.trail = CallTrail()
    return record.trail


def note_step(
    record: TelemetryRecord,
    configuration: str,
    target: Target | None,
    outcome: str,
    status: int | None = None,
    retries: int = 0,
) -> None:
    """One step of the plan (primary or fallback) and how it ended."""
    provider = target.provider.id if target is not None else None
    model = target.model.id if target is not None else None
    trail_of(record).attempts.append(
        AttemptNote(configuration, provider, model, outcome, status, retries)
    )


def note_fixed(record: TelemetryRecord, model: Model, provider_id: str) -> None:
    trail = trail_of(record)
    trail.fixed_model = model.id
    trail.fixed_provider = provider_id


def note_decision(record: TelemetryRecord, decision: Decision) -> None:
    trail_of(record).decision = decision
    record.routing_policy_mode = decision.mode.value
    record.routing_candidates = decision.candidate_count
    record.routing_rejections = decision.rejection_names()
    record.routing_cost_basis = decision.cost_basis_column
    used = decision.signals_used
    record.routing_signal_quality = Signal.QUALITY in used
    record.routing_signal_health = Signal.HEALTH in used
    record.routing_signal_cost = Signal.COST in used
    record.routing_signal_latency = Signal.LATENCY in used
    record.routing_signal_call_cost = Signal.CALL_COST in used


def note_attempt(record: TelemetryRecord, target: Target) -> None:
    """The first attempted provider and model stay on the row."""
    if record.provider is None:
        record.provider = target.provider.id
        record.adapter_type = target.provider.adapter.value
        record.model = target.model.id


def note_served(record: TelemetryRecord, target: Target) -> None:
    record.served_configuration = target.configuration.id
    record.served_provider = target.provider.id
    record.served_model = target.model.id


@dataclass(slots=True)
class CallContext:
    request: InboundRequest
    key: ApiKey | None  # the caller's gateway key (its id and hash only); None: keyless
    request_id: str
    deadline: float  # time.monotonic() value
    started: float = field(default_factory=time.perf_counter)
    record: TelemetryRecord = field(init=False)
    # Holds on the budgets of fallbacks the call reached, settled with the primary's.
    fallback_holds: list[Reservation] = field(default_factory=list)
    span: CallSpan | None = None  # telemetry.otel: the call's server span
    # Rate limits (gateway.pipeline.limits): each scope the call is counted in, with its
    # reading (the answer's x-ratelimit-* headers); what the call holds (a ticket, and the
    # step's scope it is for: a model's or a fallback's, None for the call's own); of the
    # steps' refusals (a model at its quota, a fallback at its own limit) the one that
    # frees first, its wait and, for a fallback's, its scope and reading (the headers of
    # the 429 when it is the answer).
    limit_readings: list[tuple[Scope, Reading]] = field(default_factory=list)
    limit_tickets: list[tuple[Ticket, Scope | None]] = field(default_factory=list)
    step_refusal: RateLimitExceeded | None = None
    step_refusal_wait_ms: int = 0
    step_refusal_reading: tuple[Scope, Reading] | None = None

    def __post_init__(self) -> None:
        self.record = TelemetryRecord(
            created_at=utc_now(),
            request_id=self.request_id,
            api_key_id=self.api_key_id,
            team_id=self.key.team if self.key is not None else None,
            operation=self.request.operation.value,
            inbound_api=self.request.endpoint.api,
            configuration=self.request.configuration,
            success=False,
            http_status=0,
            latency_ms=0.0,
        )

    @property
    def api_key_id(self) -> str | None:
        return self.key.id if self.key is not None else None

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self.started) * 1000.0
