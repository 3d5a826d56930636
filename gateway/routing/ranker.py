"""decide(): the one pure routing decision (docs/routing.md, from #eligibility to
#the-comparator).

The proxy, the readout and the CLI all call this; nothing else keeps a copy of the rules.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from gateway.domain.model import (
    Capability,
    Configuration,
    CostBasis,
    Model,
    Operation,
    PolicyMode,
    Provider,
)
from gateway.domain.signals import HistoryFigures, HistoryKey, Signal, SignalValues
from gateway.routing.decision import Candidate, Decision
from gateway.routing.eligibility import Rejection, check, enforcement_for
from gateway.routing.signals import (
    NEUTRAL,
    RATIO_BOUND,
    WEIGHTS,
    FigureKind,
    collects_signals,
    cost_collected,
    cost_figure,
    differ,
    latency_figure,
    list_cost_score,
    relative_scores,
    weighted_score,
)
from gateway.routing.snapshot import Snapshot

_ZERO = Decimal(0)
_NO_CALLS = HistoryFigures(calls=0, mean_latency_ms=None, costed_calls=0, mean_cost=None)

_Entry = tuple[Model, Provider, tuple[str, ...]]  # an eligible model, its provider, warnings


# The relative signals: they moved a decision only where two candidates differ on them.
_RELATIVE = frozenset({Signal.LATENCY, Signal.CALL_COST})


@dataclass(frozen=True, slots=True)
class _Column:
    """One signal across the candidates, in candidate order."""

    scored: list[float | None]  # what the score reads (0.5 fills included)
    shown: list[float | None]  # what the readout shows (no fills)


@dataclass(frozen=True, slots=True)
class _Signals:
    scored: list[SignalValues]  # per candidate, what the score reads (0.5 fills included)
    shown: list[SignalValues]  # per candidate, readout values (no fills)
    cost_basis: CostBasis | None
    measured_costs: list[Decimal | None] | None  # the tiebreak's costs on the measured basis
    history: list[HistoryFigures | None]


def decide(
    configuration: Configuration,
    operation: Operation,
    required: frozenset[Capability],
    snapshot: Snapshot,
    mode_override: PolicyMode | None = None,
    *,
    ratio_bound: float | None = RATIO_BOUND,  # None only to pin the rejected unbounded formula
) -> Decision:
    """Rank the configuration's models for one call. Raises ValueError for a fixed config.

    Pure: the same inputs give an equal decision. Callers that decide often on unchanged
    inputs (the proxy) keep a DecisionMemo (memo.py) in front of it.
    """
    return _decide(configuration, operation, required, snapshot, mode_override, ratio_bound)


def _decide(
    configuration: Configuration,
    operation: Operation,
    required: frozenset[Capability],
    snapshot: Snapshot,
    mode_override: PolicyMode | None,
    ratio_bound: float | None,
) -> Decision:
    if configuration.is_fixed:
        raise ValueError(f"configuration {configuration.id!r} is fixed: it takes no decision")
    mode = mode_override or configuration.policy_mode or snapshot.routing.policy_mode
    eligible, rejected, considered = _screen(configuration, required, snapshot)
    history = _readable_history(snapshot, mode)
    signals = _collect(configuration, operation, snapshot, mode, eligible, history, ratio_bound)
    weights = WEIGHTS[mode].per_signal()
    scores = [weighted_score(values, weights) for values in signals.scored]
    prefer_lowest_cost = configuration.criteria.prefer_lowest_cost
    order, keys = _rank(eligible, scores, signals.measured_costs, prefer_lowest_cost)
    candidates = tuple(
        Candidate(
            model=eligible[i][0],
            provider=eligible[i][1],
            rank=rank,
            score=scores[i],
            signals=signals.shown[i],
            history=signals.history[i],
            warnings=eligible[i][2],
        )
        for rank, i in enumerate(order, start=1)
    )
    return Decision(
        configuration_id=configuration.id,
        operation=operation,
        mode=mode,
        mode_overridden=mode_override is not None,
        call_history=history is not None,
        cost_basis=signals.cost_basis,
        selected=candidates[0].model if candidates else None,
        candidates=candidates,
        rejected=tuple(rejected),
        signals_used=_signals_used(weights, signals),
        candidate_count=considered,
        decided_by=_decided_by([keys[i] for i in order[:2]]),
    )


def _screen(
    configuration: Configuration, required: frozenset[Capability], snapshot: Snapshot
) -> tuple[list[_Entry], list[Rejection], int]:
    """Discovery (active models, config order) and eligibility."""
    criteria = configuration.criteria
    enforcement = enforcement_for(configuration, snapshot.routing)
    eligible: list[_Entry] = []
    rejected: list[Rejection] = []
    considered = 0
    for model in snapshot.models:
        if not model.active:
            continue
        considered += 1
        provider = snapshot.providers[model.provider]
        verdict = check(model, provider, criteria, required, snapshot.open_circuits, enforcement)
        if verdict.reason is not None:
            rejected.append(Rejection(model, provider.id, verdict.reason))
        else:
            warnings = (verdict.warning,) if verdict.warning else ()
            eligible.append((model, provider, warnings))
    return eligible, rejected, considered


def _readable_history(
    snapshot: Snapshot, mode: PolicyMode
) -> Mapping[HistoryKey, HistoryFigures] | None:
    """The history is read when callHistory is on, telemetry enabled, the mode collects signals
    and the read succeeded (snapshot.history is None otherwise)."""
    if not (snapshot.routing.call_history and snapshot.telemetry_enabled):
        return None
    if not collects_signals(mode):
        return None
    return snapshot.history


def _collect(
    configuration: Configuration,
    operation: Operation,
    snapshot: Snapshot,
    mode: PolicyMode,
    eligible: Sequence[_Entry],
    history: Mapping[HistoryKey, HistoryFigures] | None,
    bound: float | None,
) -> _Signals:
    """Each candidate's five signals: quality and health as read, latency and callCost
    relative to the other candidates' history figures, cost from the list prices."""
    n = len(eligible)
    if not collects_signals(mode):
        nothing = [SignalValues()] * n
        return _Signals(nothing, nothing, None, None, [None] * n)
    quality = _as_read([snapshot.quality.get((p.id, m.id)) for m, p, _ in eligible])
    health = _as_read([snapshot.health.get(p.id) for _, p, _ in eligible])
    figures: list[HistoryFigures | None] = [
        history.get((p.id, m.id, operation), _NO_CALLS) if history is not None else None
        for m, p, _ in eligible
    ]
    min_calls = snapshot.routing.call_history_min_calls
    latencies = [latency_figure(found, min_calls) for found in figures]
    costs = [cost_figure(found, min_calls) for found in figures]
    latency = _relative(latencies, "latency", bound)
    cost = call_cost = _Column([None] * n, [None] * n)
    basis: CostBasis | None = None
    tiebreak: list[Decimal | None] | None = None
    if cost_collected(mode, configuration.criteria.prefer_lowest_cost):
        basis = _cost_basis(eligible, costs)
        if basis is CostBasis.MEASURED:
            tiebreak = costs
            call_cost = _relative([_float(c) for c in costs], "cost", bound)
        else:
            ceiling = snapshot.routing.list_price_ceiling
            own = [list_cost_score(m.price, ceiling) for m, _, _ in eligible]
            in_play = any(x is not None for x in latencies) or any(c is not None for c in costs)
            cost = _list_cost(own, in_play)
    scored = _per_candidate(
        quality.scored, health.scored, cost.scored, latency.scored, call_cost.scored
    )
    shown = _per_candidate(quality.shown, health.shown, cost.shown, latency.shown, call_cost.shown)
    return _Signals(scored, shown, basis, tiebreak, figures)


def _per_candidate(
    quality: Sequence[float | None],
    health: Sequence[float | None],
    cost: Sequence[float | None],
    latency: Sequence[float | None],
    call_cost: Sequence[float | None],
) -> list[SignalValues]:
    """Columns (one per signal) turned into rows (one per candidate)."""
    return [
        SignalValues(quality=q, health=h, cost=c, latency=lat, call_cost=cc)
        for q, h, c, lat, cc in zip(quality, health, cost, latency, call_cost, strict=True)
    ]


def _as_read(values: list[float | None]) -> _Column:
    """An absolute signal: scored and shown as read, no fill."""
    return _Column(values, values)


def _float(cost: Decimal | None) -> float | None:
    return float(cost) if cost is not None else None


def _cost_basis(eligible: Sequence[_Entry], costs: Sequence[Decimal | None]) -> CostBasis:
    """Measured when every candidate with any cost figure has a measured one, and one has.

    An unpriced model with no priced calls has no cost figure, so it blocks neither basis.
    """
    if not any(c is not None for c in costs):
        return CostBasis.LIST
    for (model, _, _), cost in zip(eligible, costs, strict=True):
        if model.price is not None and cost is None:
            return CostBasis.LIST
    return CostBasis.MEASURED


def _relative(figures: Sequence[float | None], kind: FigureKind, bound: float | None) -> _Column:
    """A relative signal: a 0.5 fill scores a candidate without a figure, shown as None."""
    scores = relative_scores(figures, kind, bound)
    if scores is None:  # rule 1: nobody has a figure, the signal is absent from the decision
        return _Column([None] * len(figures), [None] * len(figures))
    pairs = zip(scores, figures, strict=True)
    return _Column(list(scores), [score if x is not None else None for score, x in pairs])


def _list_cost(own: Sequence[float | None], in_play: bool) -> _Column:
    # While the history is in play, a candidate with no list price counts 0.5 so it is
    # scored over the same signals as its rivals (docs/routing.md#one-cost-basis-per-decision).
    fill = NEUTRAL if in_play and any(v is not None for v in own) else None
    return _Column([v if v is not None else fill for v in own], list(own))


_RankKey = tuple[int, float, bool, Decimal, bool, int]
# What each part of the rank key is called when it is the one that separates the first two.
_KEY_NAMES = ("priority", "score", "cost", "cost", "default", "order")


def _rank(
    eligible: Sequence[_Entry],
    scores: Sequence[float],
    measured_costs: Sequence[Decimal | None] | None,
    prefer_lowest_cost: bool,
) -> tuple[list[int], list[_RankKey]]:
    """Priority desc, score desc, [cost asc, no figure last], default first, config order.

    The cost tiebreak reads the measured mean cost on the measured basis, as the score
    does, and the combined list price otherwise.
    """
    costs: Sequence[Decimal | None]
    if not prefer_lowest_cost:
        costs = [_ZERO] * len(eligible)
    elif measured_costs is not None:
        costs = measured_costs
    else:
        costs = [m.price.combined if m.price is not None else None for m, _, _ in eligible]

    def key(i: int) -> _RankKey:
        model, provider, _ = eligible[i]
        cost = costs[i]
        return (-provider.priority, -scores[i], cost is None, cost or _ZERO, not model.default, i)

    keys = [key(i) for i in range(len(eligible))]
    return sorted(range(len(eligible)), key=keys.__getitem__), keys


def _decided_by(first_two: Sequence[_RankKey]) -> str | None:
    """Which comparison put the selected model ahead of the runner-up."""
    if not first_two:
        return None
    if len(first_two) == 1:
        return "onlyCandidate"
    winner, runner_up = first_two
    return next(name for name, a, b in zip(_KEY_NAMES, winner, runner_up, strict=True) if a != b)


def _signals_used(weights: Mapping[Signal, float], signals: _Signals) -> tuple[Signal, ...]:
    """The weighted signals that moved the decision, in :class:`Signal` order."""
    used: list[Signal] = []
    for signal, weight in weights.items():
        if weight <= 0:
            continue
        if signal in _RELATIVE:
            present = [v for values in signals.scored if (v := values.of(signal)) is not None]
            if present and differ(present):
                used.append(signal)
        elif any(values.of(signal) is not None for values in signals.shown):
            used.append(signal)
    return tuple(used)
