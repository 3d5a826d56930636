"""Signal values and weights (docs/routing.md#policy-modes-and-weights, docs/routing.md#signals).

Pure functions over plain numbers, so each rule can be pinned on its own.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Literal, NamedTuple

from gateway.domain.model import PolicyMode, Price
from gateway.domain.signals import HistoryFigures, Signal, SignalValues

NEUTRAL = 0.5
RATIO_BOUND = 2.0  # r = x/g is clamped to [1/2, 2]: the signal runs from 1/3 to 2/3
ZERO_LATENCY_RATIO = 0.5  # a latency of 0 is only "fast": it stays within the bound
_SAME_RATIO = 1e-9  # x within this of g is "at the mean": float noise must not move a rank

FigureKind = Literal["latency", "cost"]


class Weights(NamedTuple):
    quality: float
    health: float
    cost: float  # weights both cost signals: list-price cost and callCost
    latency: float

    def per_signal(self) -> dict[Signal, float]:
        """Each signal's weight, in :class:`Signal` order. ``cost`` weights both cost
        signals: ``cost`` on the list basis and ``callCost`` on the measured basis (a
        decision has values for one of them only, so the weight is never counted twice)."""
        return {
            Signal.QUALITY: self.quality,
            Signal.HEALTH: self.health,
            Signal.COST: self.cost,
            Signal.LATENCY: self.latency,
            Signal.CALL_COST: self.cost,
        }


WEIGHTS: dict[PolicyMode, Weights] = {
    PolicyMode.PROVIDER_PRIORITY: Weights(0.0, 0.0, 0.0, 0.0),
    PolicyMode.BALANCED: Weights(0.4, 0.4, 0.2, 0.1),
    PolicyMode.QUALITY: Weights(0.7, 0.3, 0.0, 0.05),
    PolicyMode.ECONOMY: Weights(0.1, 0.3, 0.6, 0.05),
}


def collects_signals(mode: PolicyMode) -> bool:
    """providerPriority collects no signal at all and reads no history."""
    return mode is not PolicyMode.PROVIDER_PRIORITY


def cost_collected(mode: PolicyMode, prefer_lowest_cost: bool) -> bool:
    """economy always; balanced and quality only with preferLowestCost (quality: readout only)."""
    if mode is PolicyMode.ECONOMY:
        return True
    return prefer_lowest_cost and mode in (PolicyMode.BALANCED, PolicyMode.QUALITY)


def list_cost_score(price: Price | None, ceiling: Decimal) -> float | None:
    """``1 − min(1, (input + output) / ceiling)``; a free model 1.0, an unpriced one None."""
    if price is None:
        return None
    # Floats suffice here: the score is a float, and min() saturates before any rounding matters.
    return 1.0 - min(1.0, float(price.combined) / float(ceiling))


def latency_figure(figures: HistoryFigures | None, min_calls: int) -> float | None:
    """The key's ranked latency (docs/routing.md#call-history), from ``min_calls`` calls."""
    if figures is None or figures.calls < min_calls:
        return None
    return figures.latency_ms


def cost_figure(figures: HistoryFigures | None, min_calls: int) -> Decimal | None:
    if figures is None or figures.costed_calls < min_calls or figures.mean_cost is None:
        return None
    return figures.mean_cost


def relative_scores(
    figures: Sequence[float | None],
    kind: FigureKind,
    bound: float | None = RATIO_BOUND,
) -> list[float] | None:
    """Relative score of each candidate's figure: rules 1-5 of docs/routing.md#call-history,
    in order.

    Returns None when no candidate has a figure (rule 1: the signal is absent).
    ``bound=None`` runs the unbounded formula, which docs/routing.md#why-these-rules
    explains the clamp against.
    """
    measured = [x for x in figures if x is not None]
    if not measured:
        return None
    if len(measured) == 1:
        return [NEUTRAL] * len(figures)  # rules 2 and 3: no figure, or the sole figure
    logs = [math.log(x) for x in measured if x > 0]
    g = math.exp(math.fsum(logs) / len(logs)) if logs else 0.0
    low, high = (1.0 / bound, bound) if bound is not None else (0.0, math.inf)
    zero = 1.0 if kind == "cost" else 1.0 / (1.0 + ZERO_LATENCY_RATIO)  # rule 4
    scores: list[float] = []
    for x in figures:
        if x is None:
            scores.append(NEUTRAL)
        elif x <= 0:
            scores.append(zero)
        else:
            r = x / g
            if abs(r - 1.0) < _SAME_RATIO:
                r = 1.0  # at the mean: float noise in g must not move a rank
            scores.append(1.0 / (1.0 + min(high, max(low, r))))
    return scores


def weighted_score(values: SignalValues, weights: Mapping[Signal, float]) -> float:
    """Σ(w·v) / Σ(w) over signals with w > 0 and a value; 0.5 when none qualifies."""
    total = 0.0
    weight_sum = 0.0
    for signal, weight in weights.items():
        value = values.of(signal)
        if weight > 0 and value is not None:
            total += weight * value
            weight_sum += weight
    return total / weight_sum if weight_sum > 0 else NEUTRAL


def differ(values: Sequence[float]) -> bool:
    """Do two candidates stand apart on a relative signal (float noise aside)?"""
    return bool(values) and max(values) - min(values) > _SAME_RATIO
