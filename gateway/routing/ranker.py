"""decide(): the one pure routing decision (ROUTING.md, "The decision").

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
from gateway.domain.signals import HistoryFigures, HistoryKey
from gateway.routing.decision import SIGNAL_NAMES, Candidate, Decision
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

_Q, _H, _C, _L, _CC = range(5)  # columns, in SIGNAL_NAMES order
_ZERO = Decimal(0)
_NO_CALLS = HistoryFigures(calls=0, mean_latency_ms=None, costed_calls=0, mean_cost=None)

_Entry = tuple[Model, Provider, tuple[str, ...]]  # an eligible model, its provider, warnings


@dataclass(slots=True)
class _Signals:
    values: list[list[float | None]]  # per candidate, what the score reads (0.5 fills included)
    shown: list[list[float | None]]  # per candidate, readout values (no fills)
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
    weights = WEIGHTS[mode]
    weight_row = (weights.quality, weights.health, weights.cost, weights.latency, weights.cost)
    scores = [weighted_score(row, weight_row) for row in signals.values]
    prefer_lowest_cost = configuration.criteria.prefer_lowest_cost
    order, keys = _rank(eligible, scores, signals.measured_costs, prefer_lowest_cost)
    candidates = tuple(
        Candidate(
            model=eligible[i][0],
            provider=eligible[i][1],
            rank=rank,
            score=scores[i],
            signals=_signal_dict(signals.shown[i]),
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
        signals_used=_signals_used(weight_row, signals),
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
    n = len(eligible)
    values: list[list[float | None]] = [[None] * 5 for _ in range(n)]
    shown: list[list[float | None]] = [[None] * 5 for _ in range(n)]
    figures: list[HistoryFigures | None] = [None] * n
    latencies: list[float | None] = [None] * n
    costs: list[Decimal | None] = [None] * n
    if not collects_signals(mode):
        return _Signals(values, shown, None, None, figures)
    min_calls = snapshot.routing.call_history_min_calls
    for i, (model, provider, _) in enumerate(eligible):
        row, seen = values[i], shown[i]
        row[_Q] = seen[_Q] = snapshot.quality.get((provider.id, model.id))
        row[_H] = seen[_H] = snapshot.health.get(provider.id)
        if history is not None:
            found = figures[i] = history.get((provider.id, model.id, operation), _NO_CALLS)
            latencies[i] = latency_figure(found, min_calls)
            costs[i] = cost_figure(found, min_calls)
    _fill_relative(values, shown, _L, latencies, "latency", bound)
    in_play = any(x is not None for x in latencies) or any(c is not None for c in costs)
    basis: CostBasis | None = None
    tiebreak: list[Decimal | None] | None = None
    if cost_collected(mode, configuration.criteria.prefer_lowest_cost):
        basis = _cost_basis(eligible, costs)
        if basis is CostBasis.MEASURED:
            tiebreak = costs
            as_float = [float(c) if c is not None else None for c in costs]
            _fill_relative(values, shown, _CC, as_float, "cost", bound)
        else:
            ceiling = snapshot.routing.list_price_ceiling
            own = [list_cost_score(m.price, ceiling) for m, _, _ in eligible]
            _fill_list_cost(values, shown, own, in_play)
    return _Signals(values, shown, basis, tiebreak, figures)


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


def _fill_relative(
    values: list[list[float | None]],
    shown: list[list[float | None]],
    column: int,
    figures: Sequence[float | None],
    kind: FigureKind,
    bound: float | None,
) -> None:
    scores = relative_scores(figures, kind, bound)
    if scores is None:
        return  # rule 1: nobody has a figure, the signal is absent from the decision
    for i, score in enumerate(scores):
        values[i][column] = score
        shown[i][column] = score if figures[i] is not None else None


def _fill_list_cost(
    values: list[list[float | None]],
    shown: list[list[float | None]],
    own: Sequence[float | None],
    in_play: bool,
) -> None:
    # While the history is in play, a candidate with no list price counts 0.5 so it is
    # scored over the same signals as its rivals (the seed's third review round).
    fill = NEUTRAL if in_play and any(v is not None for v in own) else None
    for i, value in enumerate(own):
        values[i][_C] = value if value is not None else fill
        shown[i][_C] = value


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


def _signal_dict(row: Sequence[float | None]) -> dict[str, float | None]:
    return {
        "quality": row[_Q],
        "health": row[_H],
        "cost": row[_C],
        "latency": row[_L],
        "callCost": row[_CC],
    }


def _signals_used(weight_row: Sequence[float], signals: _Signals) -> tuple[str, ...]:
    used: list[str] = []
    for column, name in enumerate(SIGNAL_NAMES):
        if weight_row[column] <= 0:
            continue
        if column in (_L, _CC):
            # A relative signal moved the decision only where two candidates differ on it.
            column_values = [row[column] for row in signals.values]
            present = [v for v in column_values if v is not None]
            if present and differ(present):
                used.append(name)
        elif any(row[column] is not None for row in signals.shown):
            used.append(name)
    return tuple(used)
