"""Raw measurements read from telemetry, handed to the pure routing code."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from gateway.domain.model import LatencyMeasure, LatencyStatistic, Operation


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
