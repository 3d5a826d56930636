"""The routing signals, and the raw measurements read from telemetry that feed them."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum

from gateway.domain.model import LatencyMeasure, LatencyStatistic, Operation


class Signal(StrEnum):
    """The five signals a ranking reads (docs/routing.md#signals), in the one order the
    readout, ``signalsUsed`` and the telemetry flags list them. The value is the readout's
    name; ``cost`` is the list-price cost, ``callCost`` the measured cost per call."""

    QUALITY = "quality"
    HEALTH = "health"
    COST = "cost"
    LATENCY = "latency"
    CALL_COST = "callCost"

    @property
    def field(self) -> str:
        """The attribute of :class:`SignalValues` (``call_cost``)."""
        return self.name.lower()

    @property
    def flag_column(self) -> str:
        """The telemetry column that records whether the signal moved the decision."""
        return f"routing_signal_{self.name.lower()}"


@dataclass(frozen=True, slots=True)
class SignalValues:
    """One candidate's value of each signal; None: no value (not collected, or no data)."""

    quality: float | None = None
    health: float | None = None
    cost: float | None = None
    latency: float | None = None
    call_cost: float | None = None

    def of(self, signal: Signal) -> float | None:
        value: float | None = getattr(self, signal.field)
        return value

    def by_name(self) -> dict[str, float | None]:
        """``{"quality": …, "callCost": …}`` in :class:`Signal` order (the readout's)."""
        return {signal.value: getattr(self, signal.field) for signal in Signal}


@dataclass(frozen=True, slots=True)
class HistoryFigures:
    """One call-history key's aggregate (serving provider id, served model id, operation)."""

    calls: int
    mean_latency_ms: float | None  # the exact mean of the total latency
    costed_calls: int
    mean_cost: Decimal | None
    # routing.callHistoryStatistic and, for streams, routing.streamLatency
    # (docs/routing.md#call-history): which latency the key is ranked on.
    statistic: LatencyStatistic = "mean"
    measure: LatencyMeasure = "total"
    total_ms: float | None = None  # the statistic of the total latency (None: the mean's)
    ttft_ms: float | None = None  # the statistic of the time to first token

    @property
    def latency_ms(self) -> float | None:
        """The latency figure the key is ranked on."""
        if self.measure == "ttft":
            return self.ttft_ms
        return self.mean_latency_ms if self.total_ms is None else self.total_ms


HistoryKey = tuple[str, str, Operation]  # (provider id, model id, operation)


@dataclass(frozen=True, slots=True)
class HealthSample:
    """One provider's health window, before the score formula is applied."""

    samples: int
    successes: int
    avg_latency_ms: float | None
